import Foundation

/// What the model builder and the slot resolver need from `@Attribute` and `@Relationship`.
@usableFromInline
protocol ManagedPropertyWrapper {
    /// ``PropertyDeclarations/unmarked``; in a prototype the model is built from, the number
    /// of the wrapper's recorded declaration; for an instant
    /// ``PropertyDeclarations/probeMark`` while the slot resolver looks for this wrapper by
    /// reflection.
    var mark: UInt8 { get set }
    /// The description of the property named `name` that declared `declaration`, for building
    /// a model from classes.
    func makeDescription(name: String, declaration: PropertyDeclaration) -> NSPropertyDescription
}

extension NSManagedObject {
    /// Finds the storage index of the property whose wrapper lives at `storage`.
    ///
    /// Key paths carry no names on Linux, so the first access per entity and key path marks
    /// the wrapper, finds the marked child by reflection, and records the answer in the
    /// entity's lock-free ``KeyPathSlotCache``; every later access, on any object, is a
    /// lookup there by key path identity.
    // @inlinable (with the wrappers' subscripts): specialized in the client module, property
    // access needs no generic metadata lookups at run time (measured: they were ~15% of a
    // fetch that reads every object). The cache lookup replaced a per-wrapper cached index:
    // reading and writing that field went through the user's class property with run-time
    // exclusivity checks, and every new object missed it once per property (measured: ~230
    // instructions per property set on a new object, against ~20 now).
    @inlinable @inline(__always)
    static func slot<Object: NSManagedObject, Wrapper: ManagedPropertyWrapper>(
        of object: Object, storage: ReferenceWritableKeyPath<Object, Wrapper>
    ) -> Int {
        // Through a guaranteed reference: the cache is a `let` of the entity, which is a `let`
        // of the object, which the caller holds, so it outlives the call. Called plainly, the
        // compiler retained and released the shared cache around every property access: two
        // atomic operations on one cache line (measured: a retain/release pair per property
        // read or write, 400,000 of them in inserting 100,000 objects of four attributes).
        let known = Unmanaged.passUnretained(object.entity.storageSlotCache)._withUnsafeGuaranteedRef {
            $0.slot(for: storage)
        }
        if let known { return known }
        return resolveSlot(of: object, storage: storage)
    }

    @usableFromInline
    static func resolveSlot<Object: NSManagedObject, Wrapper: ManagedPropertyWrapper>(
        of object: Object, storage: ReferenceWritableKeyPath<Object, Wrapper>
    ) -> Int {
        let entity = object.entity
        if let known = entity.storageSlotCache.slot(for: storage) { return known }
        let key = StorageKeyPath(storage)
        if let known = entity.storageKeyPathIndex.withLock({ $0[key] }) {
            entity.storageSlotCache.record(known, for: storage)
            return known
        }
        let mark = object[keyPath: storage].mark
        object[keyPath: storage].mark = PropertyDeclarations.probeMark
        defer { object[keyPath: storage].mark = mark }
        var label: String?
        var mirror: Mirror? = Mirror(reflecting: object)
        search: while let m = mirror {
            for child in m.children {
                if let w = child.value as? any ManagedPropertyWrapper, w.mark == PropertyDeclarations.probeMark {
                    label = child.label
                    break search
                }
            }
            mirror = m.superclassMirror
        }
        guard let label, label.hasPrefix("_") else {
            programmerError("PersistenceKit: could not find the property wrapper of \(type(of: object)) by reflection.")
        }
        let name = String(label.dropFirst())
        guard let index = entity.propertyIndex(named: name) else {
            programmerError(
                "PersistenceKit: \(type(of: object)) declares '\(name)', but its entity '\(entity.name)' has no such "
                    + "property. Rule: a class's @Attribute/@Relationship properties must match its entity; build the "
                    + "model from the classes (NSManagedObjectModel(managedObjectClasses:)).")
        }
        entity.storageKeyPathIndex.withLock { $0[key] = index }
        entity.storageSlotCache.record(index, for: storage)
        return index
    }
}

/// A storage key path as a dictionary key that may cross threads.
struct StorageKeyPath: Hashable, @unchecked Sendable {
    // @unchecked Sendable: a key path is an immutable object once formed; the cache only
    // hashes and compares it, which is safe from any thread.
    let keyPath: AnyKeyPath
    init(_ keyPath: AnyKeyPath) { self.keyPath = keyPath }
}
