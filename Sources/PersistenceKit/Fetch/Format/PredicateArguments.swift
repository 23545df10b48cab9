import Foundation

/// The arguments that replace a format string's `%@`, `%K`, `%d`, ... in order.
struct PredicateArguments {
    private let values: [Any?]
    private let format: String
    private var used = 0

    init(_ values: [Any?], format: String) {
        self.values = values
        self.format = format
    }

    private func error(_ problem: String, at token: PredicateToken) -> PredicateFormatError {
        PredicateFormatError(.argument, problem, format: format, column: token.column)
    }

    /// The next argument, for the specifier `token`; an error when there is none left.
    private mutating func take(for token: PredicateToken) throws(PredicateFormatError) -> Any? {
        guard used < values.count else {
            let given = values.count == 1 ? "1 argument was given" : "\(values.count) arguments were given"
            throw error("'\(token.text)' has no argument to stand for (\(given)); pass one value per format specifier", at: token)
        }
        defer { used += 1 }
        return values[used]
    }

    /// The keys of the string passed for the `%K` `token`.
    mutating func keyPath(for token: PredicateToken) throws(PredicateFormatError) -> [String] {
        let argument = try take(for: token)
        let path: String
        if let s = argument as? String {
            path = s
        } else if let s = argument as? NSString {
            path = String(describing: s)
        } else {
            throw error(
                "%K takes a key path as a String, but argument \(used) is \(PredicateValue.typeName(of: argument))", at: token)
        }
        let keys = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !path.isEmpty, !keys.contains(where: \.isEmpty) else {
            throw error("%K takes a key path such as \"author.name\", but argument \(used) is \"\(path)\"", at: token)
        }
        return keys
    }

    /// The constant the argument of the `%@`, `%d`, `%f`, ... `token` stands for.
    mutating func constant(for token: PredicateToken, conversion: Character) throws(PredicateFormatError) -> PredicateValue {
        let argument = try take(for: token)
        guard let value = PredicateValue(argument: argument) else {
            throw error(
                "argument \(used) for '\(token.text)' is \(PredicateValue.typeName(of: argument)), which a predicate cannot "
                    + "compare (pass a String, number, Bool, Date, UUID, URL, Data, Decimal, managed object, object ID, "
                    + "or an array or set of those)", at: token)
        }
        switch conversion {
        case "@":
            return value
        case "f", "F", "e", "E", "g", "G", "a", "A":
            if case .double = value { return value }
            throw error(
                "'\(token.text)' takes a floating-point number (Double or Float), but argument \(used) is "
                    + "\(PredicateValue.typeName(of: argument)); use %@ for other values", at: token)
        default:
            if case .integer = value { return value }
            // A Bool passes as the integer 1 or 0, as it does through C variadic arguments.
            if case let .bool(b) = value { return .integer(b ? 1 : 0) }
            if case .decimal = value, argument is UInt64 || argument is UInt { return value }
            throw error(
                "'\(token.text)' takes an integer, but argument \(used) is \(PredicateValue.typeName(of: argument)); "
                    + "use %f for floating-point numbers and %@ for other values", at: token)
        }
    }
}
