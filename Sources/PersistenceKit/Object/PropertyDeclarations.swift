import Synchronization

/// What one `@Attribute` or `@Relationship` declares: its default value and options, or its
/// inverse, delete rule and counts.
@usableFromInline
enum PropertyDeclaration: Sendable {
    case attribute(defaultValue: StoreValue, optionBits: UInt8)
    case relationship(inverse: String, deleteRule: NSDeleteRule, isOptional: Bool, minCount: Int, maxCount: Int)
}

/// Where `@Attribute` and `@Relationship` leave what they declare, so that the wrappers
/// themselves store nothing but a one-byte mark.
///
/// A wrapper lives inside every managed object, and storing its declaration there (the
/// default value, an inverse name) made each object carry it again: 72 of the 224 bytes of
/// an object with four attributes, 40 bytes per relationship. The declaration is only needed
/// to build the model, and rarely after (see ``declarations(of:)``).
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
        let firstRecorded: Int
        var seen = 0
        var entries: [PropertyDeclaration] = []
    }

    /// Each recording thread's stack of recordings (a prototype's initializer could build
    /// another model), innermost last.
    private static let recordings = Lock<[UInt: [Recording]]>([:])

    /// Each class's declarations by property name, once asked for (see ``declarations(of:)``).
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
    /// declaration order, with their property names.
    private static func wrappers(of object: NSManagedObject) -> [(name: String, wrapper: any ManagedPropertyWrapper)] {
        var mirrors: [Mirror] = []
        var next: Mirror? = Mirror(reflecting: object)
        while let m = next {
            mirrors.append(m)
            next = m.superclassMirror
        }
        var result: [(name: String, wrapper: any ManagedPropertyWrapper)] = []
        for m in mirrors.reversed() {
            for child in m.children {
                guard let wrapper = child.value as? any ManagedPropertyWrapper, let label = child.label, label.hasPrefix("_")
                else { continue }
                result.append((String(label.dropFirst()), wrapper))
            }
        }
        return result
    }

    /// The declared wrappers of `cls` and its superclasses, outermost class first, in
    /// declaration order: each wrapper's property name and declaration.
    static func declaredProperties(of cls: NSManagedObject.Type)
        -> [(name: String, wrapper: any ManagedPropertyWrapper, declaration: PropertyDeclaration)]
    {
        var pass = recordPrototype(of: cls, from: 0)
        let found = wrappers(of: pass.prototype)
        var declarations = [PropertyDeclaration?](repeating: nil, count: found.count)
        var from = 0
        while true {
            for (i, w) in wrappers(of: pass.prototype).enumerated() where w.wrapper.mark != unmarked {
                let mark = Int(w.wrapper.mark)
                if mark <= pass.entries.count { declarations[i] = pass.entries[mark - 1] }
            }
            from += window
            guard from < pass.initializers else { break }
            pass = recordPrototype(of: cls, from: from)
        }
        return found.indices.map { i in
            guard let declaration = declarations[i] else {
                preconditionFailure(
                    "PersistenceKit: the wrapper of \(cls).\(found[i].name) recorded no declaration. Rule: declare "
                        + "@Attribute/@Relationship properties with an initial value or arguments, not by assigning the "
                        + "wrapper in an initializer.")
            }
            return (found[i].name, found[i].wrapper, declaration)
        }
    }

    /// What `cls` declares, by property name. Built once per class and kept: used where an
    /// object needs its class's declaration after the model was built (a required attribute
    /// that holds `nil` reads as the default its class declares).
    static func declarations(of cls: NSManagedObject.Type) -> [String: PropertyDeclaration] {
        let key = ObjectIdentifier(cls)
        if let known = byClass.withLock({ $0[key] }) { return known }
        var built: [String: PropertyDeclaration] = [:]
        for p in declaredProperties(of: cls) { built[p.name] = p.declaration }
        return byClass.withLock { all in
            if let known = all[key] { return known }
            all[key] = built
            return built
        }
    }
}
