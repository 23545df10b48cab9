import Foundation

/// A record of changes that can be reversed and replayed, with the names and behavior of
/// Foundation's `UndoManager`.
///
/// Foundation on Linux (swift-corelibs-foundation) has no `UndoManager`, so PersistenceKit
/// provides this one; on Apple platforms, where Foundation has its own, spell this one
/// `PersistenceKit.UndoManager` when both modules are imported.
///
/// # Groups
/// Actions are recorded in groups; `undo()` reverses the newest group, `redo()` replays the
/// newest undone one. Nested groups are merged into their parent when they close.
/// With ``groupsByEvent`` (the default), registering an action while no group is open opens
/// one. Foundation closes that group at the end of the run-loop turn; here the owner of the
/// changes closes it: a managed object context does so when its `perform` block (or model
/// actor job, or main-queue turn) ends. ``undo()`` closes it too. Without `groupsByEvent`,
/// open groups yourself with ``beginUndoGrouping()``: registering outside a group traps.
///
/// # Thread safety
/// Not thread-safe, as Foundation's: use an undo manager on one queue — that of the
/// context it is set on (inside `perform`, or on the main actor for the view context).
///
/// Differences from Foundation's: no run-loop modes, no notifications, no
/// `undoNestedGroup()`, no selector-based registration; targets are held strongly until
/// their actions are removed or run.
public final class UndoManager {
    /// One recorded change: reversing it may register its own reversal (for redo).
    struct Action {
        let target: AnyObject
        let run: () -> Void
    }

    /// The actions recorded together, run newest first.
    struct Group {
        var actions: [Action] = []
        var actionName = ""
    }

    private enum Replay { case none, undoing, redoing }

    private var undoStack: [Group] = []
    private var redoStack: [Group] = []
    /// The groups open now, outermost first; during `undo()` and `redo()` the one group
    /// collecting the reversals.
    private var openGroups: [Group] = []
    /// Whether the outermost open group was opened by a registration (see ``groupsByEvent``).
    private var eventGroupIsOpen = false
    private var replay = Replay.none
    private var disabledCount = 0
    /// The contexts this manager is set on, told at each checkpoint (see `checkpoint()`).
    /// Weak: a context holds its manager.
    private var contexts: [Weak] = []

    private struct Weak {
        weak var context: NSManagedObjectContext?
    }

    /// Creates an undo manager with empty stacks, ``groupsByEvent`` on and no limit on
    /// ``levelsOfUndo``.
    public init() {}

    /// Whether registering an action outside any group opens one (see the type's
    /// documentation for who closes it). `true` by default.
    public var groupsByEvent = true

    /// How many groups the undo stack keeps; the oldest are dropped beyond it. `0` (the
    /// default) means no limit.
    public var levelsOfUndo = 0 {
        didSet { trimUndoStack() }
    }

    /// How many groups are open (nested) now; `0` when none is.
    public var groupingLevel: Int { replay == .none ? openGroups.count : 0 }

    /// Whether `undo()` is running its actions.
    public var isUndoing: Bool { replay == .undoing }

    /// Whether `redo()` is running its actions.
    public var isRedoing: Bool { replay == .redoing }

    /// Whether actions are recorded: false between ``disableUndoRegistration()`` and the
    /// matching ``enableUndoRegistration()``.
    public var isUndoRegistrationEnabled: Bool { disabledCount == 0 }

    /// Stops recording actions until the matching ``enableUndoRegistration()``; calls nest.
    public func disableUndoRegistration() { disabledCount += 1 }

    /// Ends one ``disableUndoRegistration()``. Traps when registration is not disabled.
    public func enableUndoRegistration() {
        programmerCheck(
            disabledCount > 0,
            "PersistenceKit: UndoManager.enableUndoRegistration() without a matching disableUndoRegistration().")
        disabledCount -= 1
    }

    /// Opens a group: actions registered until the matching ``endUndoGrouping()`` are undone
    /// together. Groups nest. Contexts using this manager first process their pending changes.
    /// A group that a registration opened (see ``groupsByEvent``) and that is the only one
    /// open is closed first: the new group is undone on its own, not with the changes made
    /// before it.
    public func beginUndoGrouping() {
        checkpoint()
        if eventGroupIsOpen && openGroups.count == 1 && replay == .none { closeGroup() }
        openGroups.append(Group())
    }

    /// Closes the group opened last. Contexts using this manager first process their pending
    /// changes, so that the effects of their deletions (delete rules) join the group. An
    /// outermost group without actions is dropped. Traps when no group is open.
    public func endUndoGrouping() {
        programmerCheck(
            replay == .none && !openGroups.isEmpty,
            "PersistenceKit: UndoManager.endUndoGrouping() without an open group (beginUndoGrouping()).")
        checkpoint()
        // A context closes its own event group when it processes its changes.
        if !openGroups.isEmpty { closeGroup() }
    }

    /// Whether ``undo()`` has a group to reverse: the outermost open group, when it holds
    /// actions, or the newest closed one.
    public var canUndo: Bool {
        if replay != .none { return false }
        if openGroups.count == 1, !openGroups[0].actions.isEmpty { return true }
        return openGroups.count <= 1 && !undoStack.isEmpty
    }

    /// Whether ``redo()`` has a group to replay.
    public var canRedo: Bool { replay == .none && openGroups.isEmpty && !redoStack.isEmpty }

    /// Reverses the newest group of actions; their own reversals become a group ``redo()``
    /// replays. Closes the outermost group first when one is open. Does nothing when there
    /// is nothing to undo. Traps when nested groups are open, or while undoing or redoing.
    public func undo() {
        programmerCheck(replay == .none, "PersistenceKit: UndoManager.undo() called while undoing or redoing.")
        if openGroups.count == 1 { endUndoGrouping() }
        programmerCheck(
            openGroups.isEmpty,
            "PersistenceKit: UndoManager.undo() with \(openGroups.count) nested groups open. Rule: end the inner groups first.")
        checkpoint()
        guard let group = undoStack.popLast() else { return }
        if let reversal = run(group, as: .undoing) { redoStack.append(reversal) }
    }

    /// Replays the newest undone group; its reversals go back on the undo stack. Does nothing
    /// when there is nothing to redo. Traps when a group is open, or while undoing or redoing.
    public func redo() {
        programmerCheck(
            replay == .none && openGroups.isEmpty,
            "PersistenceKit: UndoManager.redo() while a group is open or while undoing or redoing.")
        checkpoint()
        guard let group = redoStack.popLast() else { return }
        if let reversal = run(group, as: .redoing) {
            undoStack.append(reversal)
            trimUndoStack()
        }
    }

    /// Records `handler`, run with `target` by the next ``undo()`` of the group it joins (or
    /// by ``redo()`` when registered while undoing). Registering outside undo and redo
    /// empties the redo stack. Does nothing while registration is disabled.
    ///
    /// Traps when no group is open and ``groupsByEvent`` is off.
    public func registerUndo<TargetType: AnyObject>(withTarget target: TargetType, handler: @escaping (TargetType) -> Void) {
        guard disabledCount == 0 else { return }
        if openGroups.isEmpty {
            programmerCheck(
                groupsByEvent,
                "PersistenceKit: UndoManager.registerUndo(withTarget:handler:) outside any group, with groupsByEvent off. "
                    + "Rule: call beginUndoGrouping() first.")
            openGroups.append(Group())
            eventGroupIsOpen = true
        }
        if replay == .none { redoStack.removeAll() }
        openGroups[openGroups.count - 1].actions.append(Action(target: target, run: { handler(target) }))
    }

    /// Names the group being recorded (the open one, or else the newest closed one), as
    /// menus show it ("Undo Rename").
    public func setActionName(_ actionName: String) {
        if !openGroups.isEmpty {
            openGroups[openGroups.count - 1].actionName = actionName
        } else if !undoStack.isEmpty {
            undoStack[undoStack.count - 1].actionName = actionName
        }
    }

    /// The name of the group ``undo()`` would reverse; empty when it has none.
    public var undoActionName: String {
        if openGroups.count == 1, !openGroups[0].actions.isEmpty { return openGroups[0].actionName }
        return undoStack.last?.actionName ?? ""
    }

    /// The name of the group ``redo()`` would replay; empty when it has none.
    public var redoActionName: String { redoStack.last?.actionName ?? "" }

    /// Empties the undo and redo stacks and drops the open groups.
    public func removeAllActions() {
        undoStack = []
        redoStack = []
        if replay == .none {
            openGroups = []
            eventGroupIsOpen = false
        }
    }

    /// Removes every action whose target is `target` from both stacks and the open groups;
    /// groups left empty go too.
    public func removeAllActions(withTarget target: AnyObject) {
        func strip(_ groups: inout [Group], keepingEmpty: Bool) {
            for g in groups.indices { groups[g].actions.removeAll { $0.target === target } }
            if !keepingEmpty { groups.removeAll { $0.actions.isEmpty } }
        }
        strip(&undoStack, keepingEmpty: false)
        strip(&redoStack, keepingEmpty: false)
        strip(&openGroups, keepingEmpty: true)
    }

    // MARK: Context support

    /// Whether registering now would open an event group (see ``groupsByEvent``).
    var opensEventGroupOnRegistration: Bool { disabledCount == 0 && openGroups.isEmpty && groupsByEvent }

    /// Closes the outermost group when a registration opened it and it is the only one
    /// open: what a context does when its `perform` block ends. No checkpoint.
    func closeEventGroup() {
        guard replay == .none, eventGroupIsOpen, openGroups.count == 1 else { return }
        closeGroup()
    }

    func addContext(_ context: NSManagedObjectContext) {
        contexts.removeAll { $0.context == nil || $0.context === context }
        contexts.append(Weak(context: context))
    }

    func removeContext(_ context: NSManagedObjectContext) {
        contexts.removeAll { $0.context == nil || $0.context === context }
    }

    // MARK: Private

    /// Lets the contexts using this manager process their pending changes, so that the
    /// effects of their deletions are recorded before a group closes or runs.
    private func checkpoint() {
        for entry in contexts { entry.context?.undoCheckpoint() }
    }

    private func closeGroup() {
        let group = openGroups.removeLast()
        if openGroups.isEmpty {
            eventGroupIsOpen = false
            if !group.actions.isEmpty {
                undoStack.append(group)
                trimUndoStack()
            }
        } else {
            openGroups[openGroups.count - 1].actions += group.actions
            if openGroups[openGroups.count - 1].actionName.isEmpty {
                openGroups[openGroups.count - 1].actionName = group.actionName
            }
        }
    }

    /// Runs `group`'s actions newest first, collecting what they register; returns that
    /// collection (named as `group`), or nil when they registered nothing.
    private func run(_ group: Group, as mode: Replay) -> Group? {
        replay = mode
        openGroups = [Group(actionName: group.actionName)]
        defer {
            openGroups = []
            replay = .none
        }
        for action in group.actions.reversed() { action.run() }
        // Deletions the actions made (undoing an insert) run their delete rules now, so
        // that what those record joins the reversal.
        checkpoint()
        let reversal = openGroups[0]
        return reversal.actions.isEmpty ? nil : reversal
    }

    private func trimUndoStack() {
        if levelsOfUndo > 0, undoStack.count > levelsOfUndo { undoStack.removeFirst(undoStack.count - levelsOfUndo) }
    }
}
