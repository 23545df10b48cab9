import Foundation

/// Keeps the results of a fetch request, grouped into sections, current as the objects of
/// its context change, and reports each change to its ``delegate`` and as
/// ``FetchedResultsSnapshot``s to ``snapshots``.
///
/// ```swift
/// let request = Book.fetchRequest()
/// request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.title, ascending: true)]
/// let controller = NSFetchedResultsController(
///     fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
/// controller.delegate = self
/// try controller.performFetch()
/// ```
///
/// Use a controller on its context's queue only (inside `perform` for a private-queue
/// context), as in Core Data: it reads and hands out that context's objects, and the
/// context posts the notifications that drive it on that queue. Not `Sendable`; its
/// ``snapshots`` are, for work elsewhere.
///
/// Sections: with a ``sectionNameKeyPath`` each object goes to the section named by the
/// value at that key path (read with `NSManagedObject.value(forKeyPath:)`, so a to-one path
/// such as `"author.name"` works). The fetch request's first sort must order the objects by
/// that value, as in Core Data: objects appear in the request's sort order, and a section
/// is placed where its first object falls. Without a key path there is one section, named
/// `""`, which exists even when it is empty.
///
/// Staying current: after ``performFetch()`` the controller follows the context's
/// `NSManagedObjectContextObjectsDidChange` notifications — its own changes when pending
/// changes are processed (explicitly, at the end of `perform`, or by a save), and changes
/// merged from other contexts. It tests changed objects of the fetched entity against the
/// request's predicate in memory and places them by its sort rules; see
/// ``NSFetchedResultsControllerDelegate`` for the reports. Changes to other objects (for
/// example the author an `"author.name"` key path reads) do not move the fetched objects,
/// as in Core Data. Unlike Core Data, a controller without a delegate stays current too.
public final class NSFetchedResultsController<ResultType: NSFetchRequestResult> {
    /// The request whose results the controller holds. Changes to it take effect at the
    /// next ``performFetch()``.
    ///
    /// Its `fetchLimit` and `fetchOffset` are honoured after changes too: when either is
    /// set, each relevant change fetches the window again (in the context, pending changes
    /// included) and reports the difference, instead of placing objects in memory.
    public let fetchRequest: NSFetchRequest<ResultType>
    /// The context whose objects the controller fetches and follows.
    public let managedObjectContext: NSManagedObjectContext
    /// The key path whose value names each object's section; `nil` for one section.
    public let sectionNameKeyPath: String?
    /// The cache name given at creation. Accepted and ignored: there is no section cache,
    /// and ``performFetch()`` always fetches.
    public let cacheName: String?
    /// Receives change reports; held weakly, as in Core Data.
    public weak var delegate: (any NSFetchedResultsControllerDelegate)?

    /// The results by section; `nil` until ``performFetch()`` succeeds.
    var results: [FetchedResultsSection]?
    /// The section name of each object in ``results``.
    var sectionNames: [ObjectIdentifier: String] = [:]
    /// The entity the request fetched.
    var fetchedEntity: NSEntityDescription?
    /// The snapshot streams' continuations; a lock because a stream ends on any thread.
    let streams = Lock<[UUID: AsyncStream<FetchedResultsSnapshot>.Continuation]>([:])
    /// The last snapshot yielded to the streams.
    var lastSnapshot: FetchedResultsSnapshot?
    private var observers: [any NSObjectProtocol] = []
    private var cachedObjects: [ResultType]?

    /// Creates a controller for `fetchRequest` in `context`. Fetches nothing until
    /// ``performFetch()``.
    ///
    /// - Parameters:
    ///   - fetchRequest: A request for managed objects with at least one sort rule
    ///     (``performFetch()`` throws otherwise).
    ///   - context: The context to fetch in and follow.
    ///   - sectionNameKeyPath: The key path naming each object's section, or `nil`.
    ///   - name: Accepted and ignored (there is no section cache).
    public init(
        fetchRequest: NSFetchRequest<ResultType>, managedObjectContext context: NSManagedObjectContext,
        sectionNameKeyPath: String?, cacheName name: String?
    ) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = context
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = name
    }

    deinit {
        for o in observers { NotificationCenter.default.removeObserver(o) }
        for c in streams.withLock({ Array($0.values) }) { c.finish() }
    }

    /// Does nothing: there is no section cache to delete (see ``cacheName``).
    public static func deleteCache(withName name: String?) {}

    /// Runs the fetch request and replaces the results; from then on the controller follows
    /// the context's changes. Reports nothing to the delegate; yields a snapshot to the
    /// ``snapshots`` streams. Call it on the context's queue.
    ///
    /// - Throws: ``CoreDataError`` `.coreData` when the request's result type is not
    ///   managed objects or it has no sort rule (Core Data raises an exception for these);
    ///   what the context's `fetch(_:)` throws. After an error the previous results stay.
    public func performFetch() throws {
        managedObjectContext.assertOnQueue("NSFetchedResultsController.performFetch()")
        guard fetchRequest.resultType == .managedObjectResultType else {
            throw CoreDataError(
                .coreData,
                "NSFetchedResultsController needs a fetch request for managed objects; its result type is "
                    + "\(fetchRequest.resultType).")
        }
        guard !fetchRequest.sortRules.isEmpty else {
            throw CoreDataError(
                .coreData,
                "NSFetchedResultsController needs a fetch request with sort descriptors (or sort keys); "
                    + "the first one must order the sections.")
        }
        fetchedEntity = try fetchRequest.resolveEntity(in: managedObjectContext.coordinator.managedObjectModel)
        let objects = try fetchManagedObjects()
        setResults(makeSections(objects, recomputing: nil))
        startObserving()
        publishSnapshot()
    }

    /// The fetched objects in order, section after section; `nil` before ``performFetch()``.
    public var fetchedObjects: [ResultType]? {
        if cachedObjects == nil, let results {
            cachedObjects = results.flatMap { $0.members.compactMap { $0 as? ResultType } }
        }
        return cachedObjects
    }

    /// The sections, in order; `nil` before ``performFetch()``.
    public var sections: [any NSFetchedResultsSectionInfo]? { results }

    /// The index titles of the sections, in section order, each listed once. Sections with
    /// no index title add none.
    public var sectionIndexTitles: [String] {
        var seen = Set<String>()
        return (results ?? []).compactMap(\.indexTitle).filter { seen.insert($0).inserted }
    }

    /// The default index title of a section named `sectionName`: its first letter,
    /// capitalized; `nil` for an empty name.
    public func sectionIndexTitle(forSectionName sectionName: String) -> String? {
        sectionName.first.map { String($0).uppercased() }
    }

    /// The section an index entry points to: the first section whose index title is `title`.
    ///
    /// Traps when `sectionIndex` is not an index of ``sectionIndexTitles`` or its title
    /// there is not `title` (Core Data raises an exception).
    public func section(forSectionIndexTitle title: String, at sectionIndex: Int) -> Int {
        let titles = sectionIndexTitles
        guard titles.indices.contains(sectionIndex), titles[sectionIndex] == title else {
            programmerError(
                "PersistenceKit: NSFetchedResultsController.section(forSectionIndexTitle: \"\(title)\", at: \(sectionIndex)) "
                    + "— the section index titles are \(titles). Rule: pass a title and its index in sectionIndexTitles.")
        }
        return results?.firstIndex { $0.indexTitle == title } ?? 0
    }

    /// The object at `indexPath` (section, then item).
    ///
    /// Traps when there is no such object (Core Data raises an exception), or before
    /// ``performFetch()``.
    public func object(at indexPath: IndexPath) -> ResultType {
        guard indexPath.count == 2, let results, results.indices.contains(indexPath[0]),
            results[indexPath[0]].members.indices.contains(indexPath[1]),
            let object = results[indexPath[0]].members[indexPath[1]] as? ResultType
        else {
            programmerError(
                "PersistenceKit: NSFetchedResultsController.object(at: \(indexPath)) — no object there; the sections hold "
                    + "\(results.map { "\($0.map(\.numberOfObjects))" } ?? "nothing (performFetch() has not run)") objects.")
        }
        return object
    }

    /// The index path (section, item) of `object` in the results; `nil` when it is not
    /// among them.
    public func indexPath(forObject object: ResultType) -> IndexPath? {
        guard let results, let target = object as? NSManagedObject else { return nil }
        for (s, section) in results.enumerated() {
            if let i = section.members.firstIndex(where: { $0 === target }) { return IndexPath(indexes: [s, i]) }
        }
        return nil
    }

    // MARK: Internals

    /// Fetches the request's objects as managed objects.
    func fetchManagedObjects() throws -> [NSManagedObject] {
        try managedObjectContext.fetch(fetchRequest).map { result in
            guard let object = result as? NSManagedObject else {
                throw CoreDataError(.coreData, "NSFetchedResultsController fetched a \(type(of: result)), not a managed object.")
            }
            return object
        }
    }

    /// Replaces the results, and the section names kept for their objects.
    func setResults(_ sections: [FetchedResultsSection]) {
        results = sections
        cachedObjects = nil
        var names: [ObjectIdentifier: String] = [:]
        names.reserveCapacity(sections.reduce(0) { $0 + $1.members.count })
        for section in sections {
            for o in section.members { names[ObjectIdentifier(o)] = section.name }
        }
        sectionNames = names
    }

    /// Groups `ordered` into sections. Section names are read for the objects in
    /// `recomputing`, and for objects with none kept; `nil` reads every object's.
    func makeSections(_ ordered: [NSManagedObject], recomputing: Set<ObjectIdentifier>?) -> [FetchedResultsSection] {
        guard sectionNameKeyPath != nil else {
            return [FetchedResultsSection(name: "", indexTitle: nil, members: ordered)]
        }
        var sections: [FetchedResultsSection] = []
        var indexByName: [String: Int] = [:]
        for o in ordered {
            let id = ObjectIdentifier(o)
            let kept = recomputing?.contains(id) == false ? sectionNames[id] : nil
            let name = kept ?? sectionName(of: o)
            if let i = indexByName[name] {
                sections[i].members.append(o)
            } else {
                indexByName[name] = sections.count
                sections.append(FetchedResultsSection(name: name, indexTitle: indexTitle(forSectionName: name), members: [o]))
            }
        }
        return sections
    }

    /// The name of `o`'s section: the value at ``sectionNameKeyPath`` as a string.
    private func sectionName(of o: NSManagedObject) -> String {
        guard let keyPath = sectionNameKeyPath, let value = o.value(forKeyPath: keyPath) else { return "" }
        if let string = value as? String { return string }
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return "" }
            return wrapped as? String ?? String(describing: wrapped)
        }
        return String(describing: value)
    }

    /// A section's index title, as the delegate or (without one) this controller gives it.
    private func indexTitle(forSectionName name: String) -> String? {
        if let delegate { return delegate.controller(self, sectionIndexTitleForSectionName: name) }
        return sectionIndexTitle(forSectionName: name)
    }

    /// Starts following the context's notifications (once).
    private func startObserving() {
        guard observers.isEmpty else { return }
        let target = FetchedResultsObserverTarget(self)
        let center = NotificationCenter.default
        observers = [
            center.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: managedObjectContext, queue: nil) { note in
                target.handler?.contextObjectsDidChange(note)
            },
            center.addObserver(forName: .NSManagedObjectContextDidSave, object: managedObjectContext, queue: nil) { _ in
                target.handler?.contextDidSave()
            },
        ]
    }
}
