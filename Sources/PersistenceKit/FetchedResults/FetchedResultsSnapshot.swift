import Foundation

/// The results of a fetched results controller at one moment, as identifiers only: the
/// section names in order and, per section, the IDs of its objects in order.
///
/// `Sendable`, so it can leave the context's queue (for example to a view on the main
/// actor), unlike the objects themselves. An object inserted and not yet saved appears
/// with its temporary ID; after the save the controller yields a snapshot with the
/// permanent one.
public struct FetchedResultsSnapshot: Sendable, Hashable, CustomStringConvertible {
    /// One section: its name and its objects' IDs.
    public struct Section: Sendable, Hashable {
        /// The section's name (see ``NSFetchedResultsSectionInfo/name``).
        public let name: String
        /// The IDs of the section's objects, in the fetch request's sort order.
        public let objectIDs: [NSManagedObjectID]

        /// Creates a section.
        public init(name: String, objectIDs: [NSManagedObjectID]) {
            self.name = name
            self.objectIDs = objectIDs
        }
    }

    /// The sections, in order.
    public let sections: [Section]

    /// Creates a snapshot of `sections`.
    public init(sections: [Section]) {
        self.sections = sections
    }

    /// The section names, in order (the section identifiers of a diffable data source).
    public var sectionIdentifiers: [String] { sections.map(\.name) }

    /// Every object ID, section after section.
    public var itemIdentifiers: [NSManagedObjectID] { sections.flatMap(\.objectIDs) }

    /// How many objects the snapshot holds.
    public var numberOfItems: Int { sections.reduce(0) { $0 + $1.objectIDs.count } }

    /// The IDs of the objects of the section named `name`; empty when there is none.
    public func itemIdentifiers(inSection name: String) -> [NSManagedObjectID] {
        sections.first { $0.name == name }?.objectIDs ?? []
    }

    /// A readable summary: each section's name and object count.
    public var description: String {
        "FetchedResultsSnapshot(" + sections.map { "\"\($0.name)\": \($0.objectIDs.count)" }.joined(separator: ", ") + ")"
    }
}
