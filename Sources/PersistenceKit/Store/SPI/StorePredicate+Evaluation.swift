import Foundation

/// What a store gives a ``StorePredicate`` to read: values of its rows, rows by ID, and the
/// rows a to-many relationship leads to.
protocol StoreRowReader {
    /// A row as the store holds it.
    associatedtype Row
    /// The value of property `column` of `row` (`.null` past the row's end).
    func value(_ column: Int, of row: Row, entity: Int32) throws -> StoreValue
    /// The row `id`, or nil when there is none.
    func row(_ id: StoreRowID) throws -> Row?
    /// The rows the to-many relationship `column` of `row` leads to.
    func targets(_ column: Int, of row: Row, entity: Int32) throws -> [StoreRowID]
    /// Whether the string in `column` of `row` passes `test`, read without making a
    /// `String` when the reader can; nil to have the value read and tested the usual way.
    func text(_ column: Int, of row: Row, entity: Int32, passes test: PreparedText) throws -> Bool?
}

extension StoreRowReader {
    /// Nil: the value is read and tested the usual way.
    func text(_ column: Int, of row: Row, entity: Int32, passes test: PreparedText) throws -> Bool? { nil }
}

/// A ``StorePredicate`` prepared for testing many rows: text patterns folded and regular
/// expressions compiled once, the destination entity of every to-many step looked up once.
struct PreparedStorePredicate: Sendable {
    /// The predicate as a tree of prepared nodes.
    indirect enum Node: Sendable {
        case constant(Bool)
        case and([Node])
        case or([Node])
        case not(Node)
        case compare(StorePath, StoreFilter.Condition.Operator, StoreValue)
        case oneOf(StorePath, [StoreValue])
        case text(StorePath, PreparedText)
        /// A to-many step, the entity its rows belong to, and the test of each row.
        case each(StorePath, StoreQuantifier, destination: Int32, Node)
        case count(StorePath, StoreFilter.Condition.Operator, Int64)
    }

    let predicate: StorePredicate
    /// The entity of the rows it is evaluated on.
    let entity: Int32
    private let root: Node

    init(_ predicate: StorePredicate, entity: Int32, model: NSManagedObjectModel) {
        self.predicate = predicate
        self.entity = entity
        func destination(of path: StorePath, from entity: Int32) -> Int32 {
            var e = model.entity(at: entity)
            for step in path.through {
                e = (e.flatMap { step < $0.properties.count ? $0.properties[step] : nil } as? NSRelationshipDescription)?.destinationEntity
            }
            guard let owner = e, path.property < owner.properties.count,
                let r = owner.properties[path.property] as? NSRelationshipDescription
            else { return -1 }
            return r.destinationEntity?.index ?? -1
        }
        func prepare(_ p: StorePredicate, _ entity: Int32) -> Node {
            switch p {
            case let .constant(b): return .constant(b)
            case let .and(parts): return .and(parts.map { prepare($0, entity) })
            case let .or(parts): return .or(parts.map { prepare($0, entity) })
            case let .not(inner): return .not(prepare(inner, entity))
            case let .compare(path, op, v): return .compare(path, op, v)
            case let .oneOf(path, vs): return .oneOf(path, vs)
            case let .text(path, test): return .text(path, PreparedText(test))
            case let .count(path, op, n): return .count(path, op, n)
            case let .each(path, q, inner):
                let d = destination(of: path, from: entity)
                return .each(path, q, destination: d, prepare(inner, d))
            }
        }
        root = prepare(predicate, entity)
    }

    /// Whether `row`, a row of ``entity``, satisfies the predicate.
    func evaluate<R: StoreRowReader>(_ row: R.Row, _ reader: R) throws -> Bool {
        try evaluate(root, row, entity, reader)
    }

    private func evaluate<R: StoreRowReader>(_ p: Node, _ row: R.Row, _ entity: Int32, _ reader: R) throws -> Bool {
        switch p {
        case let .constant(b): return b
        case let .and(parts):
            for part in parts where try !evaluate(part, row, entity, reader) { return false }
            return true
        case let .or(parts):
            for part in parts where try evaluate(part, row, entity, reader) { return true }
            return false
        case let .not(inner): return try !evaluate(inner, row, entity, reader)
        case let .compare(path, op, constant):
            let v = try value(path, row, entity, reader)
            return Self.holds(v, op, constant)
        case let .oneOf(path, constants):
            let v = try value(path, row, entity, reader)
            return constants.contains { Self.holds(v, .equal, $0) }
        case let .text(path, test):
            if path.through.isEmpty, let answer = try reader.text(path.property, of: row, entity: entity, passes: test) { return answer }
            guard case let .string(s) = try value(path, row, entity, reader) else { return false }
            return test.matches(s)
        case let .each(path, quantifier, destination, inner):
            guard let (owner, ownerEntity) = try reach(path, row, entity, reader) else { return quantifier != .any }
            for id in try reader.targets(path.property, of: owner, entity: ownerEntity) {
                guard let target = try reader.row(id) else { continue }
                let holds = try evaluate(inner, target, destination, reader)
                switch quantifier {
                case .any: if holds { return true }
                case .all: if !holds { return false }
                case .none: if holds { return false }
                }
            }
            return quantifier != .any
        case let .count(path, op, n):
            guard let (owner, ownerEntity) = try reach(path, row, entity, reader) else { return false }
            let count = try reader.targets(path.property, of: owner, entity: ownerEntity).count
            return op.holds(count < n ? .orderedAscending : (count > n ? .orderedDescending : .orderedSame))
        }
    }

    /// The row `path` ends on (after its to-one steps) and its entity; nil when a step is
    /// empty.
    private func reach<R: StoreRowReader>(_ path: StorePath, _ row: R.Row, _ entity: Int32, _ reader: R) throws -> (R.Row, Int32)? {
        var current = row
        var entity = entity
        for step in path.through {
            guard case let .reference(id) = try reader.value(step, of: current, entity: entity), let next = try reader.row(id) else {
                return nil
            }
            current = next
            entity = id.entity
        }
        return (current, entity)
    }

    /// The value at `path`; `.null` when a to-one step on the way is empty.
    @inline(__always)
    private func value<R: StoreRowReader>(_ path: StorePath, _ row: R.Row, _ entity: Int32, _ reader: R) throws -> StoreValue {
        if path.through.isEmpty { return try reader.value(path.property, of: row, entity: entity) }
        guard let (owner, ownerEntity) = try reach(path, row, entity, reader) else { return .null }
        return try reader.value(path.property, of: owner, entity: ownerEntity)
    }

    /// Whether `v op constant` holds, with Swift's optional semantics for `.null` (see
    /// ``StorePredicate``) and NaN unordered.
    static func holds(_ v: StoreValue, _ op: StoreFilter.Condition.Operator, _ constant: StoreValue) -> Bool {
        if v.isNull || constant.isNull {
            let same = v.isNull && constant.isNull
            switch op {
            case .equal: return same
            case .notEqual: return !same
            case .lessOrEqual, .greaterOrEqual, .less, .greater: return false
            }
        }
        return StoreFilter.Condition(property: 0, op, constant).matches(value: v)
    }
}

/// A text test ready to run: its pattern folded for the options, its regular expression
/// compiled.
final class PreparedText: Sendable {
    let test: StoreTextTest
    private let options: String.CompareOptions
    /// The pattern's UTF-8 bytes lowercased, when it is ASCII and case is ignored without
    /// diacritics: such a pattern is searched for byte by byte in ASCII strings.
    private let asciiFolded: [UInt8]?
    private let regex: NSRegularExpression?

    init(_ test: StoreTextTest) {
        self.test = test
        var options: String.CompareOptions = []
        if test.caseInsensitive { options.insert(.caseInsensitive) }
        if test.diacriticInsensitive { options.insert(.diacriticInsensitive) }
        self.options = options
        let ascii = test.pattern.utf8.allSatisfy { $0 < 0x80 }
        asciiFolded =
            ascii && test.caseInsensitive && !test.diacriticInsensitive
            ? test.pattern.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 } : nil
        switch test.kind {
        case .like, .matches:
            let source = test.kind == .like ? Self.regexSource(like: Self.folded(test.pattern, test)) : test.pattern
            regex = try? NSRegularExpression(
                pattern: "^(?:" + source + ")$", options: test.caseInsensitive ? [.caseInsensitive, .dotMatchesLineSeparators] : [.dotMatchesLineSeparators])
        default: regex = nil
        }
    }

    /// Whether the UTF-8 string `bytes` passes the test, when that can be told from the
    /// bytes alone (an ASCII string and a case-insensitive `contains` of an ASCII pattern);
    /// nil otherwise.
    func matches(utf8 bytes: UnsafeRawBufferPointer) -> Bool? {
        guard test.kind == .contains, let folded = asciiFolded else { return nil }
        return Self.asciiContains(bytes, folded)
    }

    /// Whether `s` passes the test.
    func matches(_ s: String) -> Bool {
        switch test.kind {
        case .equals:
            return options.isEmpty ? s == test.pattern : s.compare(test.pattern, options: options) == .orderedSame
        case .beginsWith:
            if options.isEmpty { return s.hasPrefix(test.pattern) }
            return s.range(of: test.pattern, options: options.union(.anchored)) != nil
        case .endsWith:
            if options.isEmpty { return s.hasSuffix(test.pattern) }
            return s.range(of: test.pattern, options: options.union([.anchored, .backwards])) != nil
        case .contains:
            if let folded = asciiFolded, let found = Self.asciiContains(s, folded) { return found }
            if options.isEmpty { return test.pattern.isEmpty || s.contains(test.pattern) }
            return s.range(of: test.pattern, options: options) != nil
        case .like, .matches:
            guard let regex else { return false }
            let subject = test.kind == .like ? Self.folded(s, test) : s
            let range = NSRange(subject.startIndex..<subject.endIndex, in: subject)
            return regex.firstMatch(in: subject, options: [], range: range) != nil
        }
    }

    /// `s` without diacritics when the test ignores them.
    private static func folded(_ s: String, _ test: StoreTextTest) -> String {
        test.diacriticInsensitive ? s.folding(options: .diacriticInsensitive, locale: nil) : s
    }

    /// A `LIKE` pattern as a regular expression: `*` any run, `?` one character, the rest
    /// literal.
    private static func regexSource(like pattern: String) -> String {
        var out = ""
        for c in pattern {
            switch c {
            case "*": out += ".*"
            case "?": out += "."
            default: out += NSRegularExpression.escapedPattern(for: String(c))
            }
        }
        return out
    }

    /// Whether the lowercased ASCII `needle` occurs in `s` ignoring ASCII case; nil when `s`
    /// is not ASCII (Unicode case folding then decides).
    private static func asciiContains(_ s: String, _ needle: [UInt8]) -> Bool? {
        var s = s
        return s.withUTF8 { asciiContains(UnsafeRawBufferPointer($0), needle) }
    }

    /// Whether the lowercased ASCII `needle` occurs in the UTF-8 `hay` ignoring ASCII case;
    /// nil when `hay` is not ASCII.
    private static func asciiContains(_ hay: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool? {
        // Any other byte may begin a character that Unicode case folding or canonical
        // equivalence matches differently: such strings are searched the general way.
        guard ByteReader.isASCII(hay) else { return nil }
        let n = needle.count
        if n == 0 { return true }
        guard hay.count >= n else { return false }
        let first = needle[0]
        var i = 0
        while i + n <= hay.count {
            let b = hay[i]
            if (b >= 0x41 && b <= 0x5A ? b | 0x20 : b) == first {
                var j = 1
                while j < n {
                    let c = hay[i + j]
                    if (c >= 0x41 && c <= 0x5A ? c | 0x20 : c) != needle[j] { break }
                    j += 1
                }
                if j == n { return true }
            }
            i += 1
        }
        return false
    }
}
