import Foundation

// Predicate format strings (`NSPredicate(format: "pages > %d", 100)`). Linux Foundation marks
// its `init(format:)` unavailable; these initializers, declared in this module, are the ones
// chosen at call sites that import it. A format predicate is a block predicate whose block
// holds the parsed syntax (or the parse error): evaluated on a managed object it runs the
// syntax; handed a `FormatProbe` it gives the syntax back (see `formatSyntax`).
//
// Compound predicates: Foundation's `NSCompoundPredicate` of format predicates evaluates
// their blocks, so it works as a predicate as it is; its syntax is assembled from
// `subpredicates` (an AND stops at its first false part, so a probe would not reach them all).
//
// Substitution variables: Foundation's `withSubstitutionVariables(_:)` is unavailable on
// Linux; the one below, declared in this module, is chosen at call sites instead.

/// Handed to a format predicate's block, which stores its syntax or error here.
final class FormatProbe {
    var result: Result<PredicateSyntax, PredicateFormatError>?
}

extension NSPredicate {
    /// A predicate parsed from `predicateFormat`, Core Data's predicate format string
    /// (`"title BEGINSWITH[c] %@ AND pages > %d"`), with `args` in place of its format
    /// specifiers in order: `%@` takes any value a predicate compares (strings, numbers,
    /// `Bool`, managed objects and object IDs, arrays and sets of those), `%K` a key path
    /// string, `%d`/`%i`/`%ld`/... an integer, `%f`/`%lf` a `Double` or `Float`.
    ///
    /// On Linux `Date`, `UUID`, `URL`, `Data` and `Decimal` are not `CVarArg`: pass them with
    /// ``init(format:argumentArray:)``.
    ///
    /// Never fails: a predicate whose format string or arguments are wrong matches no object
    /// (use ``init(validatingFormat:argumentArray:entity:)`` to get the error). The predicate
    /// evaluates on managed objects, and on plain values for `SELF` comparisons.
    public convenience init(format predicateFormat: String, _ args: any CVarArg...) {
        self.init(formatSyntax: Result { () throws(PredicateFormatError) in
            try PredicateParser.parse(predicateFormat, arguments: args.map { $0 })
        })
    }

    /// A predicate parsed from `predicateFormat` (see ``init(format:_:)``), with the elements
    /// of `arguments` in place of its format specifiers in order; `NSNull()` or an optional
    /// holding `nil` stands for `nil`. Takes every value ``init(format:_:)`` does, and
    /// `Date`, `UUID`, `URL`, `Data` and `Decimal` too.
    ///
    /// Never fails: a predicate whose format string or arguments are wrong matches no object.
    public convenience init(format predicateFormat: String, argumentArray arguments: [Any]?) {
        self.init(formatSyntax: Result { () throws(PredicateFormatError) in
            try PredicateParser.parse(predicateFormat, arguments: (arguments ?? []).map { $0 })
        })
    }

    /// A predicate parsed from `format` as ``init(format:argumentArray:)`` parses it, or an
    /// error saying what is wrong and at which column. With an `entity`, every key path must
    /// also name attributes and relationships of it (through relationships to their
    /// destinations), and collection operators must follow to-many relationships.
    ///
    /// - Throws: ``PredicateFormatError``.
    public convenience init(
        validatingFormat format: String, argumentArray arguments: [Any]?, entity: NSEntityDescription? = nil
    ) throws(PredicateFormatError) {
        let syntax = try PredicateParser.parse(format, arguments: (arguments ?? []).map { $0 })
        if let entity { try validate(syntax, for: entity, format: format) }
        self.init(formatSyntax: .success(syntax))
    }

    /// A block predicate that evaluates `syntax` (and matches nothing for an error).
    convenience init(formatSyntax syntax: Result<PredicateSyntax, PredicateFormatError>) {
        self.init { object, bindings in
            if let probe = object as? FormatProbe {
                probe.result = syntax
                return false
            }
            guard case let .success(tree) = syntax else { return false }
            // An evaluation that cannot complete (an unknown key, a missing variable) does
            // not match; Core Data raises instead.
            return (try? PersistenceKit.evaluate(tree, onValue: object, variables: bindings ?? [:])) ?? false
        }
    }

    /// The syntax this predicate was parsed into, or the error its format string or
    /// arguments gave; for a compound predicate, its parts' syntax combined. `nil` for
    /// predicates not made from format strings (and compounds with such a part).
    var formatSyntax: Result<PredicateSyntax, PredicateFormatError>? {
        if let compound = self as? NSCompoundPredicate {
            var parts: [PredicateSyntax] = []
            for part in compound.subpredicates {
                switch part.formatSyntax {
                case nil: return nil
                case let .failure(e)?: return .failure(e)
                case let .success(s)?: parts.append(s)
                }
            }
            switch compound.compoundPredicateType {
            case .and: return .success(.and(parts))
            case .or: return .success(.or(parts))
            case .not:
                guard parts.count == 1 else { return nil }
                return .success(.not(parts[0]))
            @unknown default: return nil
            }
        }
        let probe = FormatProbe()
        _ = evaluate(with: probe)
        return probe.result
    }

    /// A copy of this format predicate with each `$name` variable that `variables` has a
    /// value for replaced by that value (the values `%@` takes); the variables of a
    /// `SUBQUERY` stay its own. A compound predicate's parts are substituted. A predicate not
    /// made from a format string is returned as it is.
    ///
    /// Variables left without a value can still be given when evaluating, with
    /// `evaluate(with:substitutionVariables:)`; a predicate evaluated without a value for
    /// one of its variables matches nothing. A value of a type a predicate cannot compare
    /// leaves its variable in place.
    public func withSubstitutionVariables(_ variables: [String: Any]) -> NSPredicate {
        if let compound = self as? NSCompoundPredicate {
            return NSCompoundPredicate(
                type: compound.compoundPredicateType,
                subpredicates: compound.subpredicates.map { $0.withSubstitutionVariables(variables) })
        }
        guard let syntax = formatSyntax else { return self }
        return NSPredicate(formatSyntax: syntax.map { $0.substituting(variables) })
    }
}
