import Foundation

extension NSManagedObject {
    /// The entity whose class this is, from the most recently loaded model that has one (a
    /// model is loaded when a coordinator is made for it), as Core Data's `entity()`:
    /// `Book(entity: Book.entity(), insertInto: nil)`.
    ///
    /// Traps when no loaded model has an entity of this class — the message names the class.
    public class func entity() -> NSEntityDescription {
        guard let entity = EntityRegistry.entity(for: self) else {
            preconditionFailure(
                "PersistenceKit: \(self).entity() — no loaded model has an entity of class \(self). Rule: make a "
                    + "coordinator or container for a model that includes the class before asking for its entity.")
        }
        return entity
    }
}

/// The entities of loaded models, by class, for ``NSManagedObject/entity()``: the same rule
/// as `NSManagedObjectModel.entity(for:)`, by the class itself, else by class name (an entity
/// built in code names its class with `managedObjectClassName`; found in review: such an
/// entity's class could `init(context:)` but not find its `entity()`). Holds entities
/// weakly: a model that is freed leaves the table.
enum EntityRegistry {
    private enum Key: Hashable {
        case type(ObjectIdentifier)
        case name(String)
    }

    private struct WeakEntity {
        weak var entity: NSEntityDescription?
    }

    private static let table = Lock<[Key: [WeakEntity]]>([:])

    /// Records the entities of a model being loaded; each becomes its class's answer.
    static func register(_ entities: [NSEntityDescription]) {
        var kept: [NSEntityDescription] = []  // released after the lock (see below)
        table.withLock { table in
            for e in entities {
                let key: Key =
                    e.managedObjectClass != NSManagedObject.self
                    ? .type(ObjectIdentifier(e.managedObjectClass)) : .name(e.managedObjectClassName)
                if case .name("NSManagedObject") = key { continue }
                var list = table[key, default: []]
                // Strong references to the live ones leave the lock in `kept`: releasing the
                // last one inside it would free a model while the table is locked.
                kept += list.compactMap(\.entity)
                list.removeAll { $0.entity == nil }
                list.append(WeakEntity(entity: e))
                table[key] = list
            }
        }
        withExtendedLifetime(kept) {}
    }

    /// The most recently registered live entity of `type`: by the class, else by its name.
    static func entity(for type: NSManagedObject.Type) -> NSEntityDescription? {
        table.withLock { table in
            for key in [Key.type(ObjectIdentifier(type)), .name(String(describing: type))] {
                if let e = table[key]?.reversed().lazy.compactMap(\.entity).first { return e }
            }
            return nil
        }
    }
}
