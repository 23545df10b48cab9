import Foundation

// Validation predicates (`NSPropertyDescription.validationPredicates`), checked with the
// built-in constraints when an object is validated for insert or update and by
// `validateValue(_:forKey:)`: each predicate is evaluated with the property's value as
// `SELF`, and each that fails gives an error whose code its warning names.

extension NSManagedObject {
    /// The errors of this object's values against their properties' validation predicates
    /// (a `nil` value is left to optionality).
    func validationPredicateErrors() -> [CoreDataError] {
        let slots = entity.isSealed ? entity.predicateValidatedSlots : entity.properties.indices.filter {
            !entity.properties[$0].validationPredicates.isEmpty
        }
        guard !slots.isEmpty else { return [] }
        var errors: [CoreDataError] = []
        for i in slots {
            let p = entity.properties[i]
            guard let value = value(forKey: p.name), !(value is NSNull) else { continue }
            errors += Self.validationPredicateErrors(of: value, for: p, entity: entity.name, objectID: objectID)
        }
        return errors
    }

    /// The errors of `value` against `property`'s validation predicates.
    static func validationPredicateErrors(
        of value: Any, for property: NSPropertyDescription, entity: String, objectID: NSManagedObjectID?
    ) -> [CoreDataError] {
        var errors: [CoreDataError] = []
        for (k, predicate) in property.validationPredicates.enumerated() where !predicate.evaluate(with: value) {
            let warning = k < property.validationWarnings.count ? property.validationWarnings[k] : nil
            let code = validationCode(forWarning: warning)
            let shown = String(describing: value)
            let message: String =
                switch code {
                case .validationNumberTooLarge: "is \(shown), above the maximum its validation allows"
                case .validationNumberTooSmall: "is \(shown), below the minimum its validation allows"
                case .validationDateTooLate: "is \(shown), later than its validation allows"
                case .validationDateTooSoon: "is \(shown), earlier than its validation allows"
                case .validationStringTooLong: "is \"\(shown)\", longer than its validation allows"
                case .validationStringTooShort: "is \"\(shown)\", shorter than its validation allows"
                case .validationStringPatternMatching: "is \"\(shown)\", which does not match its regular expression"
                default: "is \(shown), which fails validation predicate \(k + 1)\(warning.map { ": \($0)" } ?? "")"
                }
            errors.append(
                CoreDataError(
                    code, objectID: objectID, key: property.name, value: sendableValue(value),
                    "'\(entity).\(property.name)' \(message); change the value before saving."))
        }
        return errors
    }

    /// `value` as the error carries it (``NSValidationValueErrorKey``): an attribute value as
    /// it is; anything else (objects, collections) as its description.
    private static func sendableValue(_ value: Any) -> any Sendable {
        switch value {
        case let v as String: v
        case let v as Int: v
        case let v as Int64: v
        case let v as Int32: v
        case let v as Int16: v
        case let v as Double: v
        case let v as Float: v
        case let v as Bool: v
        case let v as Date: v
        case let v as Decimal: v
        case let v as UUID: v
        case let v as URL: v
        case let v as Data: v
        default: String(describing: value)
        }
    }

    /// The error code a validation warning names: one of Core Data's validation error
    /// codes, by constant name or number, else `NSManagedObjectValidationError`.
    static func validationCode(forWarning warning: String?) -> CoreDataError.Code {
        let named: [String: CoreDataError.Code] = [
            "NSValidationNumberTooLargeError": .validationNumberTooLarge,
            "NSValidationNumberTooSmallError": .validationNumberTooSmall,
            "NSValidationDateTooLateError": .validationDateTooLate,
            "NSValidationDateTooSoonError": .validationDateTooSoon,
            "NSValidationStringTooLongError": .validationStringTooLong,
            "NSValidationStringTooShortError": .validationStringTooShort,
            "NSValidationStringPatternMatchingError": .validationStringPatternMatching,
        ]
        guard let warning else { return .managedObjectValidation }
        if let code = named[warning] { return code }
        if let n = Int(warning), let code = CoreDataError.Code(rawValue: n), (1550...1680).contains(n) { return code }
        return .managedObjectValidation
    }
}
