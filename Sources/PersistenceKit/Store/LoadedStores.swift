import Foundation

/// The stores some coordinator of this process has added, by identifier, held weakly: what
/// ``NSManagedObjectID/persistentStore`` finds. An entry goes when its store does.
enum LoadedStores {
    private struct Entry {
        weak var store: (any PersistentStore)?
    }

    private static let table = Lock<[String: Entry]>([:])

    /// Records `store` (called when a coordinator adds it).
    static func note(_ store: any PersistentStore) {
        table.withLock { t in
            t[store.identifier] = Entry(store: store)
            // Entries of stores that are gone, so that the table does not grow with every
            // store a long-running process opens and closes.
            if t.count > 64 { t = t.filter { $0.value.store != nil } }
        }
    }

    /// The store with `identifier`, while it exists.
    static func store(_ identifier: String) -> (any PersistentStore)? {
        table.withLock { $0[identifier]?.store }
    }
}

extension NSManagedObjectID {
    /// The store holding the object, as Core Data's: the store with
    /// ``persistentStoreIdentifier`` that a coordinator of this process added, while it
    /// exists; `nil` for a temporary ID.
    public var persistentStore: (any PersistentStore)? {
        persistentStoreIdentifier.flatMap(LoadedStores.store)
    }
}
