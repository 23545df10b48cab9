import Foundation

extension NSManagedObject {
    /// The entity whose class this is, from the most recently loaded model that has one (a
    /// model is loaded when a coordinator is made for it), as Core Data's `entity()`:
    /// `Book(entity: Book.entity(), insertInto: nil)`.
    ///
    /// Traps when no loaded model has an entity of this class — the message names the class.
    public class func entity() -> NSEntityDescription {
        guard let entity = EntityRegistry.entity(for: self) else {
            programmerError(
                "PersistenceKit: \(self).entity() — no loaded model has an entity of class \(self). Rule: make a "
                    + "coordinator or container for a model that includes the class before asking for its entity.")
        }
        return entity
    }
}

/// The entities of loaded models, by class, for ``NSManagedObject/entity()``: the same rule
/// as `NSManagedObjectModel.entity(for:)`, by the class itself, else by class name (an entity
/// built in code names its class with `managedObjectClassName`; without the name, such an
/// entity's class could `init(context:)` but not find its `entity()`). Holds models
/// weakly: a model that is freed leaves the table.
enum EntityRegistry {
    private enum Key: Hashable {
        case type(ObjectIdentifier)
        case name(String)
    }

    /// An entity, named by its model (held weakly) and its sealed index there.
    // Not a weak reference to the entity itself: a weak reference gives its target a side
    // table, and every retain and release of the entity — one per object made, several per
    // fetched row — then takes the runtime's slow path (measured with entities held
    // weakly: ~5% of a filtered fetch's instructions). The model is weakly
    // referenced by its entities already, and no hot path retains it.
    private struct EntityInModel {
        weak var model: NSManagedObjectModel?
        let index: Int32

        var entity: NSEntityDescription? { model?.entity(at: index) }
    }

    private static let table = Lock<[Key: [EntityInModel]]>([:])

    /// Records the entities of a model being loaded; each becomes its class's answer.
    static func register(_ entities: [NSEntityDescription]) {
        var kept: [NSManagedObjectModel] = []  // released after the lock (see below)
        table.withLock { table in
            for e in entities {
                guard let model = e.managedObjectModel else { continue }
                let key: Key =
                    e.managedObjectClass != NSManagedObject.self
                    ? .type(ObjectIdentifier(e.managedObjectClass)) : .name(e.managedObjectClassName)
                if case .name("NSManagedObject") = key { continue }
                var list = table[key, default: []]
                // Strong references to the live ones leave the lock in `kept`: releasing the
                // last one inside it would free a model while the table is locked.
                kept += list.compactMap(\.model)
                list.removeAll { $0.model == nil }
                list.append(EntityInModel(model: model, index: e.index))
                table[key] = list
            }
        }
        withExtendedLifetime(kept) {}
    }

    /// The most recently registered live entity of `type`: by the class, else by its name.
    static func entity(for type: NSManagedObject.Type) -> NSEntityDescription? {
        var found: NSEntityDescription?
        table.withLock { table in
            for key in [Key.type(ObjectIdentifier(type)), .name(String(describing: type))] {
                if let e = table[key]?.reversed().lazy.compactMap(\.entity).first {
                    found = e
                    return
                }
            }
        }
        return found
    }
}
