import Foundation

// Recording an object's changes for undo (see NSManagedObjectContext+Undo.swift). The
// write paths test `recordsUndo` first: one load from the queue the object already holds
// (no reference to the context is taken) and one branch, false unless the context has an
// undo manager. The recording itself is out of line.
extension NSManagedObject {
    /// Whether the owning context records changes for undo.
    @inline(__always)
    final var recordsUndo: Bool { contextQueue?.registersUndo.load(ordering: .relaxed) ?? false }

    /// Records the reversal of writing `newValue` over attribute `i`.
    @inline(never)
    final func recordAttributeForUndo(at i: Int, replacingWith newValue: StoreValue) {
        let old = currentAttributeValue(at: i)
        guard !old.isSame(as: newValue), let context = owningContext, let manager = context.undoRecorder() else { return }
        manager.registerUndo(withTarget: self as NSManagedObject) { o in
            guard let context = o.owningContext else { return }
            o.setAttribute(old, at: i)
            context.settleAfterUndo(o)
        }
    }

    /// Records the reversal of setting to-one slot `i` (this side only) to `target`.
    @inline(never)
    final func recordToOneForUndo(at i: Int, replacingWith target: NSManagedObject?) {
        let old = resolvedToOne(at: i)
        guard old !== target, let context = owningContext, let manager = context.undoRecorder() else { return }
        manager.registerUndo(withTarget: self as NSManagedObject) { o in
            guard let context = o.owningContext else { return }
            o.primitiveSetToOne(old, at: i)
            context.settleAfterUndo(o)
        }
    }

    /// Records the reversal of adding `target` to (or removing it from) to-many slot `i`
    /// (this side only).
    @inline(never)
    final func recordToManyForUndo(_ target: NSManagedObject, at i: Int, added: Bool) {
        guard let context = owningContext, let manager = context.undoRecorder() else { return }
        manager.registerUndo(withTarget: self as NSManagedObject) { o in
            guard let context = o.owningContext else { return }
            if added { o.primitiveRemove(target, toManyAt: i) } else { o.primitiveInsert(target, toManyAt: i) }
            context.settleAfterUndo(o)
        }
    }
}
