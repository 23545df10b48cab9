import Synchronization

/// Which storage key path belongs to which property slot, readable without a lock.
///
/// Every object resolves each wrapper's slot once, on its first access; for a fetch of
/// 25,000 objects that is 25,000 lookups per property read. A `Dictionary` behind a lock
/// hashed the key path (a walk over its components) and took the lock each time (measured:
/// a tenth of such a fetch). Here a lookup compares key path *identities* in a short,
/// append-only array: the key path of a property wrapper literal is made once per process
/// by the runtime and reused.
///
/// # Memory ordering
/// Writers (under `writeLock`) fill entry `count` and then publish it by storing `count + 1`
/// with release ordering; readers load `count` with acquire ordering and read only entries
/// below it, which are never written again. Each entry keeps its key path alive, so the
/// identity it is compared by cannot be reused by another key path.
///
/// When the array is full (more distinct key path objects than `capacity`, which only
/// happens if the runtime makes fresh key path objects), lookups miss and callers use
/// their slower path; answers are never wrong, only slower.
@usableFromInline
final class KeyPathSlotCache: Sendable {
    @usableFromInline
    struct Entry {
        @usableFromInline var identity: ObjectIdentifier
        var keyPath: AnyKeyPath
        @usableFromInline var slot: Int
    }

    private let capacity: Int
    // Written only under `writeLock`, at indexes not yet published; read only below the
    // published count (see the type's comment).
    @usableFromInline nonisolated(unsafe) let entries: UnsafeMutablePointer<Entry>
    @usableFromInline let published = Atomic<Int>(0)
    private let writeLock = Mutex<Void>(())

    init(capacity: Int = 64) {
        self.capacity = capacity
        entries = .allocate(capacity: capacity)
    }

    deinit {
        entries.deinitialize(count: published.load(ordering: .acquiring))
        entries.deallocate()
    }

    /// The slot recorded for `keyPath`, or `nil`. Inlined into property accessors.
    @inlinable @inline(__always)
    func slot(for keyPath: AnyKeyPath) -> Int? {
        let id = ObjectIdentifier(keyPath)
        let n = published.load(ordering: .acquiring)
        for i in 0..<n where entries[i].identity == id { return entries[i].slot }
        return nil
    }

    /// Records `slot` for `keyPath` (no effect when already present or full).
    func record(_ slot: Int, for keyPath: AnyKeyPath) {
        writeLock.withLock { _ in
            let n = published.load(ordering: .relaxed)
            let id = ObjectIdentifier(keyPath)
            guard n < capacity, !(0..<n).contains(where: { entries[$0].identity == id }) else { return }
            (entries + n).initialize(to: Entry(identity: id, keyPath: keyPath, slot: slot))
            published.store(n + 1, ordering: .releasing)
        }
    }
}
