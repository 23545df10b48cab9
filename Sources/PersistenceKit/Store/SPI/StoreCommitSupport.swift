import Foundation

/// The parts of the built-in stores' commit and read paths that a ``PersistentStore``
/// written outside this module needs to keep the protocol's promises: keeping both ends of
/// every link in agreement, finding the rows that would break a uniqueness constraint, and
/// evaluating a ``StorePredicate`` on rows in memory.
///
/// A store that translates some predicates into its own query language (SQL) evaluates the
/// rest here, so every predicate a fetch hands over is answered exactly as the built-in
/// stores answer it.
///
/// # Thread safety
/// Immutable once made; every method may be called from any thread.
public struct StoreCommitSupport: Sendable {
    private let links: LinkKeeper
    private let model: NSManagedObjectModel
    /// The columns of each entity's uniqueness constraints, its own and those it inherits
    /// (empty: no entity has any). A constraint an entity inherits holds across the family
    /// of the entity declaring it, which ``constraintConflicts(in:storedRows:stored:)`` checks.
    public let uniqueColumns: [Int32: [[Int]]]
    /// The model's uniqueness constraints, each once (see ``uniquenessConstraints``).
    let uniqueConstraints: UniqueConstraints

    /// Prepares the support for stores of `model` (which is sealed, as a coordinator seals it).
    public init(model: NSManagedObjectModel) {
        model.seal()
        self.model = model
        self.links = LinkKeeper(model: model)
        self.uniqueConstraints = UniqueConstraints(model: model)
        self.uniqueColumns = uniqueConstraints.columnsByEntity
    }

    /// The layout hash of the model (lowercase hex): the hash a store records and compares
    /// on open, as the file store does (see ``PersistenceKitModelLayoutHashKey``). Two models
    /// with a different hash must not share a store's rows.
    public var modelLayoutHash: String { model.layoutHashString }

    /// Rewrites `transaction` so that both ends of every link agree once it is applied, as
    /// ``PersistentStore/commit(_:)`` requires: owning ends are taken as written, derived
    /// ends follow, and rows outside the transaction whose derived ends change are appended
    /// to its updates at their current version. Call it after the optimistic-lock checks
    /// passed and before writing, while no other commit can change the rows `current` reads.
    ///
    /// - Parameter current: the stored row with this ID, or nil when there is none.
    public func keepLinks(of transaction: inout StoreTransaction, current: (StoreRowID) throws -> StoreRow?) throws {
        try links.apply(to: &transaction, current: current)
    }

    /// Whether rows of `entity` take part in links that ``keepLinks(of:current:)`` keeps.
    public func hasLinks(_ entity: Int32) -> Bool { links.hasLinks(entity) }

    /// The uniqueness-constraint conflicts `transaction` would create, judged on the rows as
    /// they would be after it (the values of rows it updates or deletes are free for its
    /// other rows), reported as the built-in stores report them: a constraint inherited from
    /// a super-entity holds across every entity below the one declaring it, and its conflicts
    /// name that entity (their rows keep their own entities).
    ///
    /// - Parameters:
    ///   - storedRows: every stored row of one entity; asked for each entity of the family of
    ///     a constraint the transaction's rows are under.
    ///   - stored: one stored row by ID.
    public func constraintConflicts(
        in transaction: StoreTransaction, storedRows: (Int32) throws -> [StoreRow], stored: (StoreRowID) throws -> StoreRow?
    ) throws -> [StoreConstraintConflict] {
        guard !uniqueConstraints.isEmpty else { return [] }
        var indexes = UniqueIndexes()
        var rowsByEntity: [Int32: [StoreRow]] = [:]
        for number in indexes.unbuiltConstraints(writtenBy: transaction, constraints: uniqueConstraints) {
            var rows: [StoreRow] = []
            for entity in uniqueConstraints.all[number].members.sorted() {
                if rowsByEntity[entity] == nil {
                    rowsByEntity[entity] = try storedRows(entity).sorted { $0.id.primaryKey < $1.id.primaryKey }
                }
                rows += rowsByEntity[entity] ?? []
            }
            indexes.build(number, constraints: uniqueConstraints) { visit in
                for row in rows { visit(row.id, row.values) }
            }
        }
        return try indexes.conflicts(in: transaction, constraints: uniqueConstraints, stored: stored)
    }

    /// `rows` (in primary-key order) in `order` (rows equal on every key keep their order),
    /// the first `offset` left out, at most `limit` of them (0: no limit): the order
    /// ``PersistentStore/fetchRows(entity:filter:order:offset:limit:)`` promises, for a
    /// store that cannot sort by some key itself.
    public static func sorted(_ rows: [StoreRow], by order: [StoreSortKey], offset: Int, limit: Int) -> [StoreRow] {
        InMemoryStore.sortAndCut(rows, order: order, offset: offset, limit: limit)
    }

    /// `predicate` prepared for testing many rows of `entity` in memory.
    public func evaluator(for predicate: StorePredicate, entity: Int32) -> StorePredicateEvaluator {
        StorePredicateEvaluator(prepared: PreparedStorePredicate(predicate, entity: entity, model: model))
    }
}

/// A ``StorePredicate`` prepared for testing rows in memory, with the semantics every
/// built-in store gives it (see ``StoreCommitSupport/evaluator(for:entity:)``).
public struct StorePredicateEvaluator: Sendable {
    fileprivate let prepared: PreparedStorePredicate

    /// Whether `row` (of the entity the predicate was prepared for) satisfies the predicate.
    /// `row(_:)` reads the rows that to-one key paths and to-many tests reach (nil: no such
    /// row); to-many values are read from the rows themselves (`.references`).
    public func matches(_ row: StoreRow, rowByID: (StoreRowID) throws -> StoreRow?) throws -> Bool {
        // The reader lives only for this call, so the closure does not outlive it.
        try withoutActuallyEscaping(rowByID) { lookup in try prepared.evaluate(row, ClosureReader(lookup: lookup)) }
    }
}

/// Reads rows for a predicate through a closure.
private struct ClosureReader: StoreRowReader {
    let lookup: (StoreRowID) throws -> StoreRow?
    func value(_ column: Int, of row: StoreRow, entity: Int32) -> StoreValue { row.value(at: column) }
    func row(_ id: StoreRowID) throws -> StoreRow? { try lookup(id) }
    func targets(_ column: Int, of row: StoreRow, entity: Int32) -> [StoreRowID] {
        if case let .references(ids) = row.value(at: column) { return ids }
        return []
    }
}

extension CoreDataError {
    /// The error a store that cannot migrate throws from its open when it was created with
    /// another model: the code a file store's mismatch gets when migration is off
    /// (`.persistentStoreIncompatibleVersionHash`, 134100), with the store's own error as
    /// `underlying`.
    public static func storeModelMismatch(
        store: String, storeHash: String, modelHash: String, underlying: (any Error & Sendable)?
    ) -> CoreDataError {
        CoreDataError(
            .persistentStoreIncompatibleVersionHash,
            "the store at \(store) was created with model \(storeHash), not this coordinator's model "
                + "\(modelHash), and stores of this type do not migrate: open it with its own model, or destroy it "
                + "and load it again.",
            underlying: underlying)
    }
}
