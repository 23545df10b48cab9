import Foundation

/// One section of a fetched results controller's results.
///
/// A value: it describes the section as it was when read from
/// ``NSFetchedResultsController/sections``, and does not follow later changes. Read it on
/// the controller's context's queue (its objects are that context's).
public protocol NSFetchedResultsSectionInfo {
    /// The section's name: the value of the controller's section name key path for its
    /// objects, as a string (`""` for `nil`, or when the controller has no key path).
    var name: String { get }
    /// The section's index title (by default the capitalized first letter of its name);
    /// `nil` when it has none.
    var indexTitle: String? { get }
    /// How many objects the section holds.
    var numberOfObjects: Int { get }
    /// The section's objects, in the fetch request's sort order.
    var objects: [Any]? { get }
}

/// A section as the controller keeps it.
struct FetchedResultsSection: NSFetchedResultsSectionInfo {
    let name: String
    let indexTitle: String?
    var members: [NSManagedObject]

    var numberOfObjects: Int { members.count }
    var objects: [Any]? { members }
}
