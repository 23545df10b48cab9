import Foundation

/// Why a predicate format string, or the arguments given with it, cannot make a predicate,
/// and where: the ``column`` of the character the problem starts at.
///
/// `NSPredicate(format:)` cannot throw (Core Data's does not either); a predicate made from
/// a bad format string matches nothing. Use ``NSPredicate/init(validatingFormat:argumentArray:entity:)``
/// to get this error thrown instead.
public struct PredicateFormatError: Error, CustomStringConvertible, Sendable, Hashable {
    /// The kind of mistake.
    public enum Kind: Sendable, Hashable {
        /// The format string does not follow the predicate grammar.
        case syntax
        /// A format argument is missing or of a type its specifier does not take.
        case argument
        /// A key path names no property of the entity, or uses a collection operator on
        /// something other than a to-many relationship.
        case key
    }

    /// The kind of mistake.
    public let kind: Kind
    /// What is wrong, as a phrase (for example "expected a value after '=='").
    public let problem: String
    /// The format string the predicate was made from (empty when unknown).
    public let format: String
    /// The 1-based column, in characters, where the mistake starts; one past the last
    /// character when the format string ends too early.
    public let column: Int
    /// For ``Kind/key`` errors: the name of the entity the key was looked up on.
    public let entityName: String?

    /// Makes an error; `problem` is a phrase saying what is wrong and, where it helps, what
    /// to write instead.
    public init(_ kind: Kind, _ problem: String, format: String, column: Int, entityName: String? = nil) {
        self.kind = kind
        self.problem = problem
        self.format = format
        self.column = column
        self.entityName = entityName
    }

    /// A sentence naming the format string, the column and what is wrong.
    public var description: String {
        let source = format.isEmpty ? "The predicate format" : "The predicate format \"\(format)\""
        return "\(source) is not valid at column \(column): \(problem)."
    }
}
