import Synchronization

/// What one `@Attribute` or `@Relationship` declares: its default value and options, or its
/// inverse, delete rule and counts.
@usableFromInline
enum PropertyDeclaration: Sendable {
    /// `@Attribute`: its initial value (the model's default) and options (bit 0 indexed,
    /// bit 1 transient, bit 2 unique, bit 3 preserved in history, bit 4 codable storage,
    /// bit 5 transformed storage).
    case attribute(defaultValue: StoreValue, optionBits: UInt8)
    /// `@Relationship`: its arguments, `maxCount` already 1 for a to-one relationship.
    case relationship(inverse: String, deleteRule: NSDeleteRule, isOptional: Bool, minCount: Int, maxCount: Int)
}

/// Where `@Attribute` and `@Relationship` leave what they declare, so that the wrappers
/// themselves store nothing but a one-byte mark.
///
/// A wrapper lives inside every managed object, and storing its declaration there (the
/// default value, an inverse name) made each object carry it again: 72 of the 224 bytes of
/// an object with four attributes, 40 bytes per relationship. The declaration is only needed
/// to build the model, and rarely after (see ``recordedDeclarations(of:)``).
///
/// So a wrapper's initializer records its declaration only while this thread builds a
/// prototype of its class (``record(_:)``); the recording marks the wrapper with its entry's
/// number, and the model builder reads each wrapper's entry by that mark, whatever order the
/// initializers ran in. Any other time the initializer costs one relaxed atomic load.
///
/// A mark has room for ``window`` entries. A class with more wrappers is built as several
/// prototypes, each recording the next window of initializers in the order they run (the
/// same order every time), until every wrapper has its entry.
///
/// While any thread records, wrapper initializers on every thread take the lock once to
/// find that they are not the recording thread (model building is rare and short).
///
/// # Thread safety
/// Recordings are kept per thread, under `recordings`' lock (a pthread `Lock`, which Thread
/// Sanitizer sees, not a futex `Mutex`, which it does not); ``activeRecordings`` only tells
/// wrappers whether any thread records at all.
@usableFromInline
enum PropertyDeclarations {
    /// The mark of a wrapper that recorded nothing.
    @usableFromInline static let unmarked: UInt8 = 0
    /// The mark the slot resolver sets on the wrapper it looks for (never a recording's).
    static let probeMark: UInt8 = .max
    /// Entries one prototype records: marks 1 through 254.
    static let window = Int(probeMark) - 1

    /// How many threads are recording now. Read by every wrapper initializer.
    @usableFromInline static let activeRecordings = Atomic<Int>(0)

    /// One prototype's recording: the initializers counted so far, and the entries of those
    /// in the window it records.
    private struct Recording {
        /// The number (from 0) of the first wrapper initializer whose declaration is kept.
        let firstRecorded: Int
        /// Wrapper initializers run on this thread since the recording began — of the
        /// prototype's own wrappers and of any other wrapper made meanwhile.
        var seen = 0
        /// The declarations kept: those of initializers `firstRecorded..<firstRecorded + window`.
        var entries: [PropertyDeclaration] = []
    }

    /// Each recording thread's stack of recordings (a prototype's initializer could build
    /// another model), innermost last.
    private static let recordings = Lock<[UInt: [Recording]]>([:])

    /// Each class's declarations by property name, kept when a model is built from it.
    private static let byClass = Lock<[ObjectIdentifier: [String: PropertyDeclaration]]>([:])

    /// Whether some thread records declarations now; `false` nearly always.
    @inlinable @inline(__always)
    static var isRecording: Bool { activeRecordings.load(ordering: .relaxed) != 0 }

    /// Records `declaration` if this thread is recording and the initializer falls in the
    /// recording's window; returns the wrapper's mark (its entry's number, from 1) or
    /// ``unmarked``.
    static func record(_ declaration: PropertyDeclaration) -> UInt8 {
        let thread = currentThreadID()
        return recordings.withLock { all -> UInt8 in
            guard var stack = all[thread], var current = stack.popLast() else { return unmarked }
            let position = current.seen - current.firstRecorded
            current.seen += 1
            var mark = unmarked
            if position >= 0 && position < window {
                current.entries.append(declaration)
                mark = UInt8(current.entries.count)
            }
            stack.append(current)
            all[thread] = stack
            return mark
        }
    }

    /// Records what `@Attribute` declares (kept out of line: wrapper initializers are inlined
    /// into every object's initializer).
    @usableFromInline @inline(never)
    static func recordAttribute<Value: AttributeValue>(_ defaultValue: Value, optionBits: UInt8) -> UInt8 {
        record(.attribute(defaultValue: defaultValue.storeValue, optionBits: optionBits))
    }

    /// Records what `@Relationship` declares.
    @usableFromInline @inline(never)
    static func recordRelationship(
        inverse: String, deleteRule: NSDeleteRule, isOptional: Bool, minCount: Int, maxCount: Int
    ) -> UInt8 {
        record(
            .relationship(inverse: inverse, deleteRule: deleteRule, isOptional: isOptional, minCount: minCount, maxCount: maxCount))
    }

    /// Builds a prototype of `cls` that belongs to no context, recording what the wrapper
    /// initializers from number `firstRecorded` on declare (a window of them); returns the
    /// prototype, the entries its wrappers' marks index (from 1), and how many wrapper
    /// initializers ran.
    private static func recordPrototype(of cls: NSManagedObject.Type, from firstRecorded: Int)
        -> (prototype: NSManagedObject, entries: [PropertyDeclaration], initializers: Int)
    {
        let thread = currentThreadID()
        recordings.withLock { $0[thread, default: []].append(Recording(firstRecorded: firstRecorded)) }
        // The count goes up before the prototype is built and down after, on this thread:
        // its wrappers' initializers see it (program order), and a wrapper on another thread
        // that sees it only looks for a recording of its own thread, and finds none.
        activeRecordings.add(1, ordering: .relaxed)
        let prototype = cls.init(entity: NSEntityDescription(), insertInto: nil)
        activeRecordings.subtract(1, ordering: .relaxed)
        let recording = recordings.withLock { all -> Recording in
            var stack = all[thread] ?? []
            let top = stack.popLast() ?? Recording(firstRecorded: firstRecorded)
            all[thread] = stack.isEmpty ? nil : stack
            return top
        }
        return (prototype, recording.entries, recording.seen)
    }

    /// The wrappers of `object`'s class and superclasses, outermost class first, in
    /// declaration order, with their property names and the class that declares each.
    private static func wrappers(of object: NSManagedObject)
        -> [(name: String, wrapper: any ManagedPropertyWrapper, declaringClass: ObjectIdentifier)]
    {
        var mirrors: [Mirror] = []
        var next: Mirror? = Mirror(reflecting: object)
        while let m = next {
            mirrors.append(m)
            next = m.superclassMirror
        }
        var result: [(name: String, wrapper: any ManagedPropertyWrapper, declaringClass: ObjectIdentifier)] = []
        for m in mirrors.reversed() {
            let declaringClass = ObjectIdentifier(m.subjectType)
            for child in m.children {
                guard let wrapper = child.value as? any ManagedPropertyWrapper, let label = child.label, label.hasPrefix("_")
                else { continue }
                result.append((String(label.dropFirst()), wrapper, declaringClass))
            }
        }
        return result
    }

    /// The declared wrappers of `cls` and its superclasses, outermost class first, in
    /// declaration order: each wrapper's property name, declaration and declaring class.
    /// Keeps the result for ``recordedDeclarations(of:)``.
    ///
    /// Instantiates `cls` with a blank entity and no context (once, or once per ``window``
    /// of wrappers), as the model builder always has. Traps when a wrapper's declaration
    /// cannot be told: a wrapper that was not made by its own property's initial value
    /// while the prototype was built (one copied from elsewhere), or an initializer that
    /// makes a different number of wrappers each time it runs.
    static func declaredProperties(of cls: NSManagedObject.Type)
        -> [(name: String, wrapper: any ManagedPropertyWrapper, declaration: PropertyDeclaration, declaringClass: ObjectIdentifier)]
    {
        var pass = recordPrototype(of: cls, from: 0)
        let initializers = pass.initializers
        let found = wrappers(of: pass.prototype)
        var declarations = [PropertyDeclaration?](repeating: nil, count: found.count)
        var from = 0
        while true {
            var owner = [Int: Int]()  // mark -> index in `found`, this pass
            for (i, w) in wrappers(of: pass.prototype).enumerated() where w.wrapper.mark != unmarked {
                let mark = Int(w.wrapper.mark)
                guard mark <= pass.entries.count else { continue }  // another window's
                if let other = owner.updateValue(i, forKey: mark) {
                    programmerError(
                        "PersistenceKit: \(cls).\(found[other].name) and \(cls).\(found[i].name) carry the same wrapper, so "
                            + "their declarations cannot be told apart. Rule: declare each @Attribute/@Relationship with "
                            + "its own initial value or arguments; do not assign one wrapper value to several properties.")
                }
                declarations[i] = pass.entries[mark - 1]
            }
            from += window
            guard from < initializers else { break }
            pass = recordPrototype(of: cls, from: from)
            // The windows count initializers in the order they run: every pass must run the
            // same ones. An initializer that first touches a static holding wrappers runs
            // more of them in the first pass, shifting the later windows: that is refused.
            programmerCheck(
                pass.initializers == initializers,
                "PersistenceKit: building \(cls) ran \(initializers) property-wrapper initializers once and "
                    + "\(pass.initializers) the next time. Rule: a class with more than \(window) @Attribute/@Relationship "
                    + "properties must make the same wrappers every time it is initialized (no wrappers made lazily).")
        }
        let result = found.indices.map {
            i -> (name: String, wrapper: any ManagedPropertyWrapper, declaration: PropertyDeclaration, declaringClass: ObjectIdentifier) in
            guard let declaration = declarations[i] else {
                programmerError(
                    "PersistenceKit: the wrapper of \(cls).\(found[i].name) recorded no declaration while \(cls) was "
                        + "built: it was not made by its own property's initial value (copied from elsewhere?). Rule: "
                        + "declare each @Attribute/@Relationship with its own initial value or arguments.")
            }
            return (found[i].name, found[i].wrapper, declaration, found[i].declaringClass)
        }
        var byName: [String: PropertyDeclaration] = [:]
        for p in result { byName[p.name] = p.declaration }
        byClass.withLock { $0[ObjectIdentifier(cls)] = byName }
        return result
    }

    /// What `cls` declares, by property name, if a model was built from `cls` in this
    /// process (``declaredProperties(of:)`` keeps it); `nil` otherwise. Never instantiates
    /// the class.
    static func recordedDeclarations(of cls: NSManagedObject.Type) -> [String: PropertyDeclaration]? {
        byClass.withLock { $0[ObjectIdentifier(cls)] }
    }
}
