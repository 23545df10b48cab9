import Foundation

/// The kind of change a fetched results controller reports, with Core Data's raw values.
public enum NSFetchedResultsChangeType: UInt, Sendable, Hashable {
    /// An object or section was added to the results.
    case insert = 1
    /// An object or section left the results.
    case delete = 2
    /// An object changed its place: another section, or another position among the
    /// objects that did not change.
    case move = 3
    /// An object that stays in place changed.
    case update = 4
}

/// Receives a fetched results controller's change reports.
///
/// Every method is called on the controller's context's queue, while the controller
/// processes one objects-did-change notification of that context, in this order:
/// ``controllerWillChangeContent(_:)``; the section changes
/// (``controller(_:didChange:atSectionIndex:for:)``: deletions, then insertions); the object
/// changes (``controller(_:didChange:at:for:newIndexPath:)``: deletions, insertions, moves,
/// updates); ``controllerDidChangeContent(_:)``. A notification that changes nothing in the
/// results calls none of them.
///
/// Every method has an empty default implementation (the section-index-title method
/// defaults to the controller's ``NSFetchedResultsController/sectionIndexTitle(forSectionName:)``),
/// so a delegate implements only what it needs. The methods are generic over the
/// controller's result type: implement them with that generic signature, for example
/// `func controllerDidChangeContent<R>(_ controller: NSFetchedResultsController<R>)`. A
/// method written for one result type (`NSFetchedResultsController<Book>`) does not
/// implement the requirement and is never called.
public protocol NSFetchedResultsControllerDelegate: AnyObject {
    /// Called before the controller reports the changes one notification made. The
    /// controller's ``NSFetchedResultsController/fetchedObjects`` and
    /// ``NSFetchedResultsController/sections`` still hold the results before those changes.
    func controllerWillChangeContent<R>(_ controller: NSFetchedResultsController<R>)

    /// Reports one object's change. `indexPath` is its place before the changes (for a
    /// deletion, move or update; `nil` for an insertion); `newIndexPath` its place after
    /// them (for an insertion, move or update; `nil` for a deletion). The controller
    /// already holds the new results. `anObject` is the managed object.
    func controller<R>(
        _ controller: NSFetchedResultsController<R>, didChange anObject: Any, at indexPath: IndexPath?,
        for type: NSFetchedResultsChangeType, newIndexPath: IndexPath?)

    /// Reports a section's insertion (at its new index) or deletion (at its old index).
    func controller<R>(
        _ controller: NSFetchedResultsController<R>, didChange sectionInfo: any NSFetchedResultsSectionInfo,
        atSectionIndex sectionIndex: Int, for type: NSFetchedResultsChangeType)

    /// Called after the controller reported the changes one notification made.
    func controllerDidChangeContent<R>(_ controller: NSFetchedResultsController<R>)

    /// The index title of the section named `sectionName`; by default the controller's
    /// ``NSFetchedResultsController/sectionIndexTitle(forSectionName:)``. Returning `nil`
    /// gives the section no index title.
    func controller<R>(_ controller: NSFetchedResultsController<R>, sectionIndexTitleForSectionName sectionName: String)
        -> String?
}

extension NSFetchedResultsControllerDelegate {
    /// Does nothing.
    public func controllerWillChangeContent<R>(_ controller: NSFetchedResultsController<R>) {}

    /// Does nothing.
    public func controller<R>(
        _ controller: NSFetchedResultsController<R>, didChange anObject: Any, at indexPath: IndexPath?,
        for type: NSFetchedResultsChangeType, newIndexPath: IndexPath?
    ) {}

    /// Does nothing.
    public func controller<R>(
        _ controller: NSFetchedResultsController<R>, didChange sectionInfo: any NSFetchedResultsSectionInfo,
        atSectionIndex sectionIndex: Int, for type: NSFetchedResultsChangeType
    ) {}

    /// Does nothing.
    public func controllerDidChangeContent<R>(_ controller: NSFetchedResultsController<R>) {}

    /// Returns the controller's ``NSFetchedResultsController/sectionIndexTitle(forSectionName:)``.
    public func controller<R>(_ controller: NSFetchedResultsController<R>, sectionIndexTitleForSectionName sectionName: String)
        -> String?
    {
        controller.sectionIndexTitle(forSectionName: sectionName)
    }
}
