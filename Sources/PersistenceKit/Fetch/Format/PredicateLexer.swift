import Foundation

/// A token of a predicate format string.
struct PredicateToken: Equatable {
    enum Kind: Equatable {
        /// A name: a key or a keyword. `escaped` when written with `#` (`#size`): never a keyword.
        case identifier(String, escaped: Bool)
        case string(String)
        case integer(Int64)
        case double(Double)
        /// `%@`, `%K`, `%d`, ...: the conversion character, and the length modifier before it.
        case format(conversion: Character, length: String)
        /// `$name`.
        case variable(String)
        /// `@count`, `@sum`, ...: the name after `@`.
        case collectionOperator(String)
        /// `[c]`, `[d]`, `[cd]`: the letters inside.
        case options(String)
        /// An operator or punctuation mark: `(`, `)`, `{`, `}`, `,`, `.`, `-`, `==`, `&&`, ...
        case symbol(String)
        case end
    }

    let kind: Kind
    /// The 1-based column of the token's first character.
    let column: Int
    /// The token as written.
    let text: String
}

/// Splits a predicate format string into tokens.
struct PredicateLexer {
    private let format: String
    private let chars: [Character]
    private var i = 0

    init(_ format: String) {
        self.format = format
        self.chars = Array(format)
    }

    /// The tokens of the format string, ending with `.end`.
    static func tokens(of format: String) throws(PredicateFormatError) -> [PredicateToken] {
        var lexer = PredicateLexer(format)
        var tokens: [PredicateToken] = []
        while true {
            let t = try lexer.next()
            tokens.append(t)
            if t.kind == .end { return tokens }
        }
    }

    private static let symbols = ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||", "=", "<", ">", "!", "(", ")", "{", "}", ",", ".", "-"]
    private static let lengthModifiers: Set<Character> = ["h", "l", "q", "z", "t", "j", "L"]
    private static let conversions: Set<Character> = ["@", "K", "d", "i", "o", "u", "x", "X", "D", "U", "O", "f", "F", "e", "E", "g", "G", "a", "A"]

    private func error(_ problem: String, at index: Int) -> PredicateFormatError {
        PredicateFormatError(.syntax, problem, format: format, column: index + 1)
    }

    private func token(_ kind: PredicateToken.Kind, from start: Int) -> PredicateToken {
        PredicateToken(kind: kind, column: start + 1, text: String(chars[start..<i]))
    }

    private mutating func next() throws(PredicateFormatError) -> PredicateToken {
        while i < chars.count, chars[i].isWhitespace { i += 1 }
        let start = i
        guard i < chars.count else { return PredicateToken(kind: .end, column: i + 1, text: "") }
        let c = chars[i]
        if c.isLetter || c == "_" || c == "#" {
            let escaped = c == "#"
            if escaped { i += 1 }
            let name = readName()
            if name.isEmpty { throw error("expected a key after '#'", at: start) }
            return token(.identifier(name, escaped: escaped), from: start)
        }
        if c == "$" || c == "@" {
            i += 1
            let name = readName()
            if name.isEmpty { throw error("expected a name after '\(c)'", at: start) }
            return token(c == "$" ? .variable(name) : .collectionOperator(name), from: start)
        }
        if c == "\"" || c == "'" { return try readString(quote: c) }
        if c.isASCII, c.isNumber { return try readNumber() }
        if c == "%" { return try readFormatSpecifier() }
        if c == "[" {
            i += 1
            let letters = readName()
            guard i < chars.count, chars[i] == "]" else {
                throw error("expected comparison options such as [c], [d] or [cd] after an operator", at: start)
            }
            i += 1
            return token(.options(letters), from: start)
        }
        for s in Self.symbols where matches(s) {
            i += s.count
            return token(.symbol(s), from: start)
        }
        throw error("unexpected character '\(c)'", at: start)
    }

    private func matches(_ s: String) -> Bool {
        var j = i
        for ch in s {
            guard j < chars.count, chars[j] == ch else { return false }
            j += 1
        }
        return true
    }

    private mutating func readName() -> String {
        let start = i
        while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" { i += 1 }
        return String(chars[start..<i])
    }

    private mutating func readString(quote: Character) throws(PredicateFormatError) -> PredicateToken {
        let start = i
        i += 1
        var value = ""
        while i < chars.count {
            let c = chars[i]
            if c == quote {
                i += 1
                return token(.string(value), from: start)
            }
            if c == "\\" {
                guard i + 1 < chars.count else { break }
                i += 1
                switch chars[i] {
                case "n": value.append("\n")
                case "t": value.append("\t")
                case "r": value.append("\r")
                case "0": value.append("\0")
                case "u":
                    let hex = String(chars[(i + 1)..<min(i + 5, chars.count)])
                    guard hex.count == 4, let code = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(code) else {
                        throw error("expected four hexadecimal digits after \\u", at: i - 1)
                    }
                    value.unicodeScalars.append(scalar)
                    i += 4
                default: value.append(chars[i])
                }
                i += 1
                continue
            }
            value.append(c)
            i += 1
        }
        throw error("the string starting here has no closing \(quote)", at: start)
    }

    private mutating func readNumber() throws(PredicateFormatError) -> PredicateToken {
        let start = i
        if chars[i] == "0", i + 1 < chars.count, chars[i + 1] == "x" || chars[i + 1] == "X" {
            i += 2
            let digits = readName()
            guard let v = Int64(digits, radix: 16) else { throw error("'0x\(digits)' is not a hexadecimal integer", at: start) }
            return token(.integer(v), from: start)
        }
        var isInteger = true
        while i < chars.count, chars[i].isASCII, chars[i].isNumber { i += 1 }
        if i + 1 < chars.count, chars[i] == ".", chars[i + 1].isASCII, chars[i + 1].isNumber {
            isInteger = false
            i += 1
            while i < chars.count, chars[i].isASCII, chars[i].isNumber { i += 1 }
        }
        if i < chars.count, chars[i] == "e" || chars[i] == "E" {
            var j = i + 1
            if j < chars.count, chars[j] == "+" || chars[j] == "-" { j += 1 }
            if j < chars.count, chars[j].isASCII, chars[j].isNumber {
                isInteger = false
                i = j
                while i < chars.count, chars[i].isASCII, chars[i].isNumber { i += 1 }
            }
        }
        let text = String(chars[start..<i])
        if i < chars.count, chars[i].isLetter { throw error("'\(text)\(chars[i])' is not a number", at: start) }
        if isInteger, let v = Int64(text) { return token(.integer(v), from: start) }
        guard let v = Double(text) else { throw error("'\(text)' is not a number", at: start) }
        return token(.double(v), from: start)
    }

    private mutating func readFormatSpecifier() throws(PredicateFormatError) -> PredicateToken {
        let start = i
        i += 1
        var length = ""
        while i < chars.count, Self.lengthModifiers.contains(chars[i]) {
            length.append(chars[i])
            i += 1
        }
        guard i < chars.count else { throw error("the format specifier '%\(length)' has no conversion character", at: start) }
        let conversion = chars[i]
        i += 1
        guard Self.conversions.contains(conversion) else {
            throw error(
                "'%\(length)\(conversion)' is not a format specifier a predicate takes (use %@ for objects, %K for key paths, "
                    + "%d or %i for integers, %f for floating-point numbers)", at: start)
        }
        return token(.format(conversion: conversion, length: length), from: start)
    }
}
