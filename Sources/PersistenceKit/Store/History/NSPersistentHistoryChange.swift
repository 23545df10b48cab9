import Foundation

/// What happened to an object in a history transaction, with Core Data's raw values.
public enum NSPersistentHistoryChangeType: Int, Sendable, Hashable {
    /// The object was inserted.
    case insert = 0
    /// The object was updated.
    case update = 1
    /// The object was deleted.
    case delete = 2
}

/// One object's change in a history transaction (Core Data's class of this name).
///
/// Not `Sendable` (``tombstone`` holds untyped values): use it on the thread that fetched it.
public final class NSPersistentHistoryChange: CustomStringConvertible {
    /// The transaction it belongs to (held strongly: a change does not outlive it).
    private let owner: NSPersistentHistoryTransaction
    private let index: Int

    init(transaction: NSPersistentHistoryTransaction, index: Int) {
        self.owner = transaction
        self.index = index
    }

    /// The transaction the change belongs to.
    public var transaction: NSPersistentHistoryTransaction? { owner }

    private var record: StoreHistoryChange { owner.record.changes[index] }

    /// The change's number in its store's history: ascending in commit order, unique per
    /// store (the transaction number times 2^24 plus the change's position in it).
    public var changeID: Int64 {
        Int64(truncatingIfNeeded: owner.record.token << 24 | UInt64(index))
    }

    /// What happened to the object.
    public var changeType: NSPersistentHistoryChangeType {
        switch record.kind {
        case .insert: .insert
        case .update: .update
        case .delete: .delete
        }
    }

    /// The object changed.
    public var changedObjectID: NSManagedObjectID {
        guard let id = owner.objectID(of: record.row) else {
            programmerError("PersistenceKit internal error: a history change names entity \(record.row.entity), which its model lacks")
        }
        return id
    }

    /// For an update, the properties whose values changed; `nil` for an insert or a delete.
    public var updatedProperties: Set<NSPropertyDescription>? {
        guard record.kind == .update, let entity = owner.model.entity(at: record.row.entity) else { return nil }
        return Set(record.updatedColumns.compactMap { $0 < entity.properties.count ? entity.properties[$0] : nil })
    }

    /// For a delete, the deleted object's values of the attributes marked
    /// ``NSAttributeDescription/preservesValueInHistoryOnDeletion``, by attribute name (a nil
    /// value is left out); `nil` for an insert or an update, or when no attribute is marked.
    public var tombstone: [AnyHashable: Any]? {
        guard record.kind == .delete, !record.tombstone.isEmpty, let entity = owner.model.entity(at: record.row.entity)
        else { return nil }
        var values: [AnyHashable: Any] = [:]
        for v in record.tombstone where v.column < entity.properties.count {
            guard let a = entity.properties[v.column] as? NSAttributeDescription, let value = a.anyValue(from: v.value) else { continue }
            values[a.name] = value
        }
        return values
    }

    /// A readable summary for logs and messages.
    public var description: String {
        "NSPersistentHistoryChange(\(changeType), \(record.row))"
    }
}
