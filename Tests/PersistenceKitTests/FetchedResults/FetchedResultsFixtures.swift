import Foundation
import Testing
@testable import PersistenceKit

// The model and delegate the fetched-results tests share: notes in categories, with an
// optional folder (for a to-one section key path).

final class FRNote: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute var category: String = ""
    @Attribute var rank: Int64 = 0
    @Relationship(inverse: "notes", deleteRule: .nullifyDeleteRule) var folder: FRFolder?
}

final class FRFolder: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "folder", deleteRule: .nullifyDeleteRule) var notes: Set<FRNote>
}

enum FRFixtures {
    /// A container with a loaded in-memory store of its own, for the note model.
    static func container(name: String = #function) throws -> NSPersistentContainer {
        let model = try NSManagedObjectModel(managedObjectClasses: [FRNote.self, FRFolder.self])
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    /// Inserts a note into `context`.
    @discardableResult
    static func note(_ title: String, _ category: String, rank: Int64, in context: NSManagedObjectContext) -> FRNote {
        let note = FRNote(context: context)
        note.title = title
        note.category = category
        note.rank = rank
        return note
    }

    /// A request for notes ordered by category, then rank.
    static func request(predicate: Predicate<FRNote>? = nil) -> NSFetchRequest<FRNote> {
        let request = FRNote.fetchRequest()
        request.predicate = predicate
        request.sortKeys = [SortKey("category"), SortKey("rank")]
        return request
    }

    /// A fetched controller for `request` in `context`, sectioned by category, with
    /// `recorder` as its delegate; already fetched.
    static func controller(
        _ request: NSFetchRequest<FRNote> = request(), in context: NSManagedObjectContext, keyPath: String? = "category",
        recorder: FRRecorder
    ) throws -> NSFetchedResultsController<FRNote> {
        let controller = NSFetchedResultsController(
            fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: keyPath, cacheName: nil)
        controller.delegate = recorder
        try controller.performFetch()
        return controller
    }
}

/// Records a controller's delegate calls as lines: `will`, `did`, `section insert 2 z`,
/// `insert 0.1 T` (new path), `delete 0.1` (old path), `move 0.1 > 1.0 T`,
/// `update 0.1 > 0.1 T`.
final class FRRecorder: NSFetchedResultsControllerDelegate {
    private(set) var lines: [String] = []
    /// The index titles to give sections, by name; others get the default.
    var indexTitles: [String: String?] = [:]

    func take() -> [String] {
        defer { lines = [] }
        return lines
    }

    private static func path(_ p: IndexPath?) -> String { p.map { "\($0[0]).\($0[1])" } ?? "-" }

    func controllerWillChangeContent<R>(_ controller: NSFetchedResultsController<R>) { lines.append("will") }

    func controllerDidChangeContent<R>(_ controller: NSFetchedResultsController<R>) { lines.append("did") }

    func controller<R>(
        _ controller: NSFetchedResultsController<R>, didChange sectionInfo: any NSFetchedResultsSectionInfo,
        atSectionIndex sectionIndex: Int, for type: NSFetchedResultsChangeType
    ) {
        lines.append("section \(type == .insert ? "insert" : "delete") \(sectionIndex) \(sectionInfo.name)")
    }

    func controller<R>(
        _ controller: NSFetchedResultsController<R>, didChange anObject: Any, at indexPath: IndexPath?,
        for type: NSFetchedResultsChangeType, newIndexPath: IndexPath?
    ) {
        switch type {
        case .insert:
            #expect(indexPath == nil)
            lines.append("insert \(Self.path(newIndexPath)) \((anObject as? FRNote)?.title ?? "?")")
        case .delete:
            #expect(newIndexPath == nil)
            lines.append("delete \(Self.path(indexPath))")
        case .move:
            lines.append("move \(Self.path(indexPath)) > \(Self.path(newIndexPath)) \((anObject as? FRNote)?.title ?? "?")")
        case .update:
            lines.append("update \(Self.path(indexPath)) > \(Self.path(newIndexPath)) \((anObject as? FRNote)?.title ?? "?")")
        }
    }

    func controller<R>(_ controller: NSFetchedResultsController<R>, sectionIndexTitleForSectionName sectionName: String)
        -> String?
    {
        if let title = indexTitles[sectionName] { return title }
        return controller.sectionIndexTitle(forSectionName: sectionName)
    }
}

extension NSFetchedResultsController where ResultType == FRNote {
    /// Section name and titles of each section, for comparing with expectations.
    var layout: [String] {
        (sections ?? []).map { s in
            s.name + ":" + (s.objects ?? []).map { ($0 as? FRNote)?.title ?? "?" }.joined(separator: ",")
        }
    }
}
