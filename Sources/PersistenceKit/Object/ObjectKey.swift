import Synchronization

/// An object ID's identity without the ID object: 16 bytes of plain data, kept beside the
/// entity by a managed object or an `NSManagedObjectID`.
///
/// A managed object holds its `ObjectKey` and makes its `NSManagedObjectID` only when asked:
/// the context registers, finds and re-keys objects by key, so a fetched row or an inserted
/// object costs no ID allocation unless someone reads `objectID` (measured: making, and for
/// inserts later freeing, an ID object per row was a tenth of a filtered fetch and a twentieth
/// of inserting 100,000 objects). The store is a number, not its identifier string: a string
/// made every copy of a key a retain, and every object 32 bytes larger.
struct ObjectKey: Hashable, Sendable {
    /// The temporary number (`store == 0`), or the row's primary key.
    let number: Int64
    /// The row's entity index, for permanent keys (0 for temporary ones).
    let entityIndex: Int32
    /// 0 for a temporary key; otherwise the store's number (see `StoreNumbers`).
    let store: UInt32

    private static let temporaryCounter = Atomic<Int64>(1)

    /// A new temporary key, unique in the process.
    static func nextTemporary() -> ObjectKey {
        ObjectKey(number: temporaryCounter.wrappingAdd(1, ordering: .relaxed).oldValue, entityIndex: 0, store: 0)
    }

    /// `count` fresh temporary numbers, unique in the process: the first of them (the rest
    /// follow it).
    static func reserveTemporaryNumbers(_ count: Int) -> Int64 {
        temporaryCounter.wrappingAdd(Int64(count), ordering: .relaxed).oldValue
    }

    /// The temporary key numbered `number` (one `nextTemporary()` or
    /// `reserveTemporaryNumbers(_:)` handed out).
    init(temporary number: Int64) {
        self.init(number: number, entityIndex: 0, store: 0)
    }

    private init(number: Int64, entityIndex: Int32, store: UInt32) {
        self.number = number
        self.entityIndex = entityIndex
        self.store = store
    }

    /// The key of row `row` of the store numbered `storeNumber`.
    init(row: StoreRowID, storeNumber: UInt32) {
        precondition(storeNumber != 0, "PersistenceKit internal error: store numbers start at 1")
        self.init(number: row.primaryKey, entityIndex: row.entity, store: storeNumber)
    }

    /// The key of row `row` of the store with identifier `store`.
    init(row: StoreRowID, store: String) {
        self.init(row: row, storeNumber: StoreNumbers.number(for: store))
    }

    var isTemporary: Bool { store == 0 }

    /// The store row, for permanent keys.
    var rowID: StoreRowID? {
        isTemporary ? nil : StoreRowID(entity: entityIndex, primaryKey: number)
    }

    var key: NSManagedObjectID.Key {
        isTemporary ? .temporary(UInt64(bitPattern: number)) : .permanent(StoreRowID(entity: entityIndex, primaryKey: number))
    }

    /// The identifier of the key's store; `nil` for temporary keys.
    var storeIdentifier: String? {
        isTemporary ? nil : StoreNumbers.identifier(store)
    }

    /// A cheap multiplicative mix of the key and `entity` (no SipHash: keys are not
    /// attacker-chosen, and this runs for every object a fetch or insert registers). Equal
    /// keys of one entity have equal hash codes.
    ///
    /// Keys are mixed in runs of eight: the low three bits of the number pass through
    /// unmixed, so consecutive primary keys — a fetch's rows, in key order — land in
    /// neighbouring buckets of `ObjectRegistry` (eight 16-byte buckets: two cache lines),
    /// while runs are spread like single keys. (Measured: with every key scattered, looking
    /// up and registering the 25,000 objects of a filtered fetch was 15% of its samples,
    /// nearly all cache misses into a 1 MiB table; with runs of eight, 9%. Longer runs saved
    /// little more and make a run that lands on another longer to probe past.)
    ///
    /// The price, measured on a replica of the table at 1,000,000 sequential keys
    /// and load 0.48: probes run 3–4x longer on average (a missing key: 2.2 → 8–11 buckets;
    /// the longest, 50 → 200–1,000), as a run that collides pushes a whole run of eight into
    /// the next block; backward-shift removals scan ~8 buckets instead of ~1. The probes stay
    /// in cache lines already fetched: sequential inserts took half the time, lookups in
    /// random order 9% more.
    @inline(__always)
    func hashCode(for entity: NSEntityDescription) -> Int {
        let e = UInt64(UInt(bitPattern: ObjectIdentifier(entity)))
        let k =
            isTemporary
            ? UInt64(bitPattern: number) ^ 0x5555_5555_5555_5555
            : UInt64(bitPattern: number) &+ UInt64(UInt32(bitPattern: entityIndex)) << 48
        var x = ((k >> 3) ^ (e &* 0x9E37_79B9_7F4A_7C15)) &* 0xBF58_476D_1CE4_E5B9
        x ^= x >> 31
        return Int(truncatingIfNeeded: (x << 3) | (k & 7))
    }
}

/// Store identifiers by number, for `ObjectKey`: each identifier seen in the process gets
/// the next number from 1, for the life of the process (one short string per store ever
/// opened). Contexts keep the number of their store at hand (`storeNumber(for:)`), so the
/// lock is not taken per object.
enum StoreNumbers {
    private static let table = Lock<(identifiers: [String], numbers: [String: UInt32])>(([], [:]))

    /// The number of `identifier`, assigned on first use.
    static func number(for identifier: String) -> UInt32 {
        table.withLock { t in
            if let n = t.numbers[identifier] { return n }
            t.identifiers.append(identifier)
            let n = UInt32(t.identifiers.count)
            t.numbers[identifier] = n
            return n
        }
    }

    /// The identifier numbered `number` (assigned by `number(for:)`).
    static func identifier(_ number: UInt32) -> String {
        table.withLock { $0.identifiers[Int(number) - 1] }
    }
}
