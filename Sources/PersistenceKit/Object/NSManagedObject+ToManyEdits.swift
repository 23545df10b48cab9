import Foundation

// Saving an object with a large to-many in time proportional to the change.
//
// A save writes every changed object's row, and a row holds each to-many as a sorted list
// of row IDs. Encoding that list from the object's set, and checking that every target is
// still in the context, visits every target: a shelf of 50,000 books that gained one book
// cost about 18 ms a save, all of it in that walk. So while an object's to-many slots are
// its snapshot's lists changed only by the edits recorded here, the save starts from the
// snapshot's list and applies the edits, and checks only the targets added since.
//
// The tracking is conservative: it starts where the slots are known to equal the snapshot
// (values moved out of a fetched or saved row; a save that stored the values as sent), and
// every other write to the slots, the snapshot or the context ends it (`forgetToManyEdits`,
// called by those accessors and by the few places that write the stored properties
// directly). An object without tracking is encoded and checked the full way, as before.
// Debug builds compare every patched list with the full encoding.

/// One object's to-many edits since its snapshot, kept by its context.
struct ToManyEdits {
    /// The targets added to and removed from one to-many since the snapshot. An object is
    /// never in both, and `added` holds no target the snapshot lists (an add of a present
    /// target changes nothing and is not recorded).
    struct Slot {
        var added: Set<NSManagedObject> = []
        var removed: Set<NSManagedObject> = []

        mutating func record(_ target: NSManagedObject, added isAdd: Bool) {
            if isAdd {
                if removed.remove(target) == nil { added.insert(target) }
            } else {
                if added.remove(target) == nil { removed.insert(target) }
            }
        }
    }

    /// Held strongly: while the entry lives its key cannot be reused by another object.
    let object: NSManagedObject
    /// By slot index.
    var slots: [Int: Slot] = [:]
}

extension NSManagedObject {
    /// Starts tracking: the to-many slots equal the snapshot's lists from now on. Only in a
    /// context, which keeps the edits.
    @inline(__always)
    func startTrackingToManyEdits() {
        forgetToManyEdits()
        guard let context = owningContext else { return }
        moreFlags.insert(.toManyEditsTracked)
        toManyTrackingEpoch = context.departures
    }

    /// Ends tracking and drops the recorded edits: the slots or the snapshot changed in a
    /// way the edits do not describe. The next save encodes the to-manys in full. Cheap
    /// when nothing is tracked (one bit test, inlined into the accessors that call it).
    @inline(__always)
    func forgetToManyEdits() {
        if moreFlags.contains(.toManyEditsTracked) { dropToManyEdits() }
    }

    @inline(never)
    private func dropToManyEdits() {
        if moreFlags.contains(.toManyEditsRecorded) { owningContext?.toManyEdits[ObjectIdentifier(self)] = nil }
        moreFlags.remove([.toManyEditsTracked, .toManyEditsRecorded])
    }

    /// Records that `target` was added to (or removed from) to-many slot `i`, which it was
    /// not in (or was in) — called by the one-side primitives after they changed the set.
    @inline(__always)
    func recordToManyEdit(_ target: NSManagedObject, at i: Int, added: Bool) {
        guard moreFlags.contains(.toManyEditsTracked) else { return }
        guard let context = owningContext else { return forgetToManyEdits() }
        let key = ObjectIdentifier(self)
        if !moreFlags.contains(.toManyEditsRecorded) {
            context.toManyEdits[key] = ToManyEdits(object: self)
            moreFlags.insert(.toManyEditsRecorded)
        }
        context.toManyEdits[key]?.slots[i, default: ToManyEdits.Slot()].record(target, added: added)
    }

    /// The snapshot's list of to-many slot `i` and the edits since, when they tell the
    /// slot's targets (nil: encode and check the set in full).
    private func trackedToMany(at i: Int) -> (base: [StoreRowID], edits: ToManyEdits.Slot)? {
        guard moreFlags.contains(.toManyEditsTracked), let snapshot = storedSnapshot,
            case let .references(base) = snapshot.value(at: i)
        else { return nil }
        guard moreFlags.contains(.toManyEditsRecorded) else { return (base, ToManyEdits.Slot()) }
        return (base, owningContext?.toManyEdits[ObjectIdentifier(self)]?.slots[i] ?? ToManyEdits.Slot())
    }

    /// To-many slot `i`, which holds `count` targets, as the sorted rows a store keeps, from
    /// the snapshot's list and the edits; nil when they do not tell it. `rowFor` as in
    /// `encodedValue(at:rowFor:)`.
    ///
    /// A list of another length than the set means a target the lists do not know: one
    /// that had no row when the snapshot was taken (an object a validation hook inserted
    /// during a save, left for the next one, whose row the tracking started after that save
    /// did not list; patched, the list would be written without it). Then the set is
    /// encoded in full.
    func patchedToManyRows(at i: Int, count: Int, rowFor: (NSManagedObject) -> StoreRowID?) -> [StoreRowID]? {
        guard let (base, edits) = trackedToMany(at: i), base.isSortedUnique else { return nil }
        if edits.added.isEmpty && edits.removed.isEmpty { return base.count == count ? base : nil }
        var removes: [StoreRowID] = []
        removes.reserveCapacity(edits.removed.count)
        for o in edits.removed {
            guard let row = o.rowID else { return nil }  // was in the snapshot, so it has a row
            removes.append(row)
        }
        // A target without a row is left out, as the full encoding leaves it out.
        let adds = edits.added.compactMap(rowFor)
        var rows = base
        rows.apply(adding: adds, removing: removes)
        return rows.count == count ? rows : nil
    }

    /// The targets of to-many slot `i` that a save must check are still in the context:
    /// those added since the snapshot, when the slot is tracked and no object has left the
    /// context since the tracking started; nil when every target must be checked.
    ///
    /// The snapshot's targets were in the context when it was taken, so only one that left
    /// the context since can be dangling. The inverse's delete rule usually takes a deleted
    /// target out of the set, but not always: not with "no action", and not when this
    /// context's copy of the target no longer points here (another context moved it, and
    /// this one refreshed it) or the deletion was merged in while this object was unchanged;
    /// both leave a deleted target in a tracked set. So any departure since the tracking
    /// started means a full check.
    func toManyTargetsToCheck(at i: Int) -> Set<NSManagedObject>? {
        guard let context = owningContext, !context.departuresOverflowed, toManyTrackingEpoch == context.departures,
            let (_, edits) = trackedToMany(at: i)
        else { return nil }
        return edits.added
    }
}
