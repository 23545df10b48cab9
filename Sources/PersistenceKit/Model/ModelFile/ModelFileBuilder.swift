import Foundation

/// Turns the `<model>` element of an Xcode model file into entity descriptions.
///
/// Reads in passes, so that entities and composites may name each other in any order:
/// composites first, then each entity's own properties, then relationship destinations and
/// inverses, then fetch indexes and uniqueness constraints, which name properties.
struct ModelFileBuilder {
    let url: URL
    let classes: [NSManagedObject.Type]

    func build(_ root: ModelFileElement) throws(ModelFileError) -> ModelFileReader.Result {
        var composites: [String: ModelFileElement] = [:]
        for c in root.children(named: "composite") {
            composites[try required("name", of: c, entity: nil)] = c
        }
        var entities: [NSEntityDescription] = []
        var elements: [(NSEntityDescription, ModelFileElement)] = []
        for element in root.children(named: "entity") {
            let entity = try makeEntity(element, composites: composites)
            entities.append(entity)
            elements.append((entity, element))
        }
        let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        // Inheritance before relationships: an inverse may be a property the destination
        // inherits.
        for (entity, element) in elements {
            guard let parentName = element.attributes["parentEntity"] else { continue }
            guard let parent = byName[parentName] else {
                throw ModelFileError(.unknownParentEntity(parentName), url: url, line: element.line, entity: entity.name)
            }
            parent.subentities.append(entity)
        }
        for (entity, element) in elements {
            try connectRelationships(of: entity, element, entities: byName)
            try applyIndexesAndConstraints(to: entity, element)
        }
        let identifier = root.attributes["userDefinedModelVersionIdentifier"].flatMap { $0.isEmpty ? nil : $0 }
        return ModelFileReader.Result(entities: entities, versionIdentifier: identifier)
    }

    // MARK: Entities

    private func makeEntity(_ element: ModelFileElement, composites: [String: ModelFileElement]) throws(ModelFileError) -> NSEntityDescription {
        let name = try required("name", of: element, entity: nil)
        let entity = NSEntityDescription()
        entity.name = name
        if let represented = element.attributes["representedClassName"], !represented.isEmpty {
            if let type = resolveClass(represented) {
                entity.managedObjectClass = type
            } else {
                entity.managedObjectClassName = represented.hasPrefix(".") ? String(represented.dropFirst()) : represented
            }
        }
        entity.isAbstract = element.flag("isAbstract")
        entity.renamingIdentifier = Self.renamingIdentifier(of: element)
        entity.versionHashModifier = element.attributes["versionHashModifier"]
        var properties: [NSPropertyDescription] = []
        for child in element.children {
            switch child.name {
            case "attribute": properties.append(try makeAttribute(child, entity: name, composites: composites))
            case "relationship": properties.append(try makeRelationship(child, entity: name))
            default: continue
            }
        }
        entity.properties = properties
        return entity
    }

    /// The class for a `representedClassName`: one of `classes` whose name matches (with or
    /// without its module; Xcode writes `.Book` for "current product module"), else a
    /// module-qualified name the Swift runtime knows, else none (objects are `NSManagedObject`s).
    private func resolveClass(_ represented: String) -> NSManagedObject.Type? {
        let bare = represented.split(separator: ".").last.map(String.init) ?? represented
        if let match = classes.first(where: { String(reflecting: $0) == represented || String(describing: $0) == bare }) {
            return match
        }
        if !represented.hasPrefix("."), represented.contains("."), let type = _typeByName(represented) as? NSManagedObject.Type {
            return type
        }
        return nil
    }

    // MARK: Attributes

    private func makeAttribute(
        _ element: ModelFileElement, entity: String, composites: [String: ModelFileElement]
    ) throws(ModelFileError) -> NSAttributeDescription {
        let name = try required("name", of: element, entity: entity)
        let typeName = element.attributes["attributeType"] ?? "Undefined"
        guard let type = Self.attributeTypes[typeName] else {
            throw ModelFileError(.unknownAttributeType(typeName), url: url, line: element.line, entity: entity, property: name)
        }
        let attribute: NSAttributeDescription
        if type == .compositeAttributeType {
            let compositeName = try required("composite", of: element, entity: entity, property: name)
            guard let declaration = composites[compositeName] else {
                throw ModelFileError(.unknownComposite(compositeName), url: url, line: element.line, entity: entity, property: name)
            }
            var parts: [NSAttributeDescription] = []
            for part in declaration.children(named: "attribute") {
                parts.append(try makeAttribute(part, entity: entity, composites: [:]))
            }
            attribute = NSCompositeAttributeDescription(name: name, elements: parts)
        } else if element.flag("derived"), let expression = element.attributes["derivationExpression"] {
            let derived = NSDerivedAttributeDescription(name: name, type: type)
            derived.derivationExpression = Self.derivation(expression)
            attribute = derived
        } else {
            attribute = NSAttributeDescription(name: name, type: type)
        }
        if type == .transformableAttributeType {
            attribute.valueTransformerName = element.attributes["valueTransformerName"]
            attribute.attributeValueClassName = element.attributes["customClassName"]
        }
        attribute.isOptional = element.flag("optional")
        attribute.isTransient = element.flag("transient")
        attribute.isIndexed = element.flag("indexed")
        applyVersioning(element, to: attribute)
        if let text = element.attributes["defaultValueString"] ?? element.attributes["defaultDateTimeInterval"] {
            let dateInterval = element.attributes["defaultDateTimeInterval"]
            guard let value = Self.defaultValue(text, dateInterval: dateInterval, type: type) else {
                throw ModelFileError(.invalidDefaultValue(text), url: url, line: element.line, entity: entity, property: name)
            }
            attribute.defaultValue = value
        }
        try applyValidation(element, to: attribute, entity: entity)
        return attribute
    }

    /// An attribute's minimum, maximum and regular expression as Xcode writes them
    /// (`minValueString`, `maxValueString`, dates' `minDateTimeInterval` and
    /// `maxDateTimeInterval`, `regularExpressionString`), as the validation predicates and
    /// warnings Core Data makes of them: a string's length, a number's or date's value.
    private func applyValidation(_ element: ModelFileElement, to attribute: NSAttributeDescription, entity: String) throws(ModelFileError) {
        var predicates: [NSPredicate] = []
        var warnings: [String] = []
        let type = attribute.attributeType
        for (bound, isMinimum) in [("min", true), ("max", false)] {
            let dateInterval = element.attributes["\(bound)DateTimeInterval"]
            guard let text = element.attributes["\(bound)ValueString"] ?? dateInterval else { continue }
            let op = isMinimum ? ">=" : "<="
            switch type {
            case .stringAttributeType:
                guard let n = Int(text) else {
                    throw ModelFileError(.invalidNumber(text), url: url, line: element.line, entity: entity, property: attribute.name)
                }
                predicates.append(NSPredicate(format: "length \(op) %d", n))
                warnings.append(isMinimum ? "NSValidationStringTooShortError" : "NSValidationStringTooLongError")
            case .dateAttributeType:
                guard let date = Self.defaultValue(text, dateInterval: dateInterval, type: type) else {
                    throw ModelFileError(.invalidNumber(text), url: url, line: element.line, entity: entity, property: attribute.name)
                }
                predicates.append(NSPredicate(format: "SELF \(op) %@", argumentArray: [date]))
                warnings.append(isMinimum ? "NSValidationDateTooSoonError" : "NSValidationDateTooLateError")
            case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .doubleAttributeType,
                .floatAttributeType, .decimalAttributeType:
                guard let n = Self.defaultValue(text, dateInterval: nil, type: type) else {
                    throw ModelFileError(.invalidNumber(text), url: url, line: element.line, entity: entity, property: attribute.name)
                }
                predicates.append(NSPredicate(format: "SELF \(op) %@", argumentArray: [n]))
                warnings.append(isMinimum ? "NSValidationNumberTooSmallError" : "NSValidationNumberTooLargeError")
            default:
                continue
            }
        }
        if type == .stringAttributeType, let pattern = element.attributes["regularExpressionString"], !pattern.isEmpty {
            // Checked here: a pattern that does not compile would fail every value's save.
            guard (try? NSRegularExpression(pattern: pattern)) != nil else {
                throw ModelFileError(
                    .invalidRegularExpression(pattern), url: url, line: element.line, entity: entity, property: attribute.name)
            }
            predicates.append(NSPredicate(format: "SELF MATCHES %@", pattern))
            warnings.append("NSValidationStringPatternMatchingError")
        }
        if !predicates.isEmpty { attribute.setValidationPredicates(predicates, withValidationWarnings: warnings) }
    }

    /// A derivation as Xcode writes it: a key path (`books.@count`, `books.@sum.pages`) or a
    /// function over one (`count:(books)`, `sum:(books.pages)`). What it may say is checked
    /// with the model, as for a model built in code.
    static func derivation(_ text: String) -> FetchExpression {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let open = trimmed.firstIndex(of: "("), trimmed.hasSuffix(")"), trimmed[..<open].hasSuffix(":") {
            let function = String(trimmed[..<open])
            let argument = trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)]
            return FetchExpression(forFunction: function, arguments: [FetchExpression(forKeyPath: String(argument))])
        }
        return FetchExpression(forKeyPath: trimmed)
    }

    /// Xcode's names of the attribute types.
    static let attributeTypes: [String: NSAttributeType] = [
        "Undefined": .undefinedAttributeType, "Integer 16": .integer16AttributeType,
        "Integer 32": .integer32AttributeType, "Integer 64": .integer64AttributeType,
        "Decimal": .decimalAttributeType, "Double": .doubleAttributeType, "Float": .floatAttributeType,
        "String": .stringAttributeType, "Boolean": .booleanAttributeType, "Date": .dateAttributeType,
        "Binary": .binaryDataAttributeType, "UUID": .UUIDAttributeType, "URI": .URIAttributeType,
        "Transformable": .transformableAttributeType, "ObjectID": .objectIDAttributeType,
        "Composite": .compositeAttributeType,
    ]

    /// The Swift value of a default written in a model file: numbers and Booleans (`YES`/`NO`)
    /// as text, dates as seconds since the reference date (`defaultDateTimeInterval`); `nil`
    /// when the text does not convert.
    static func defaultValue(_ text: String, dateInterval: String?, type: NSAttributeType) -> Any? {
        switch type {
        case .integer16AttributeType: return Int16(text)
        case .integer32AttributeType: return Int32(text)
        case .integer64AttributeType: return Int64(text)
        case .doubleAttributeType: return Double(text)
        case .floatAttributeType: return Float(text)
        case .decimalAttributeType: return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
        case .stringAttributeType: return text
        case .booleanAttributeType:
            switch text.uppercased() {
            case "YES", "TRUE", "1": return true
            case "NO", "FALSE", "0": return false
            default: return nil
            }
        case .dateAttributeType:
            return Double(dateInterval ?? text).map { Date(timeIntervalSinceReferenceDate: $0) }
        case .UUIDAttributeType: return UUID(uuidString: text)
        case .URIAttributeType: return URL(string: text)
        default: return nil
        }
    }

    // MARK: Relationships

    private func makeRelationship(_ element: ModelFileElement, entity: String) throws(ModelFileError) -> NSRelationshipDescription {
        let name = try required("name", of: element, entity: entity)
        let relationship = NSRelationshipDescription()
        relationship.name = name
        relationship.isOptional = element.flag("optional")
        relationship.isTransient = element.flag("transient")
        relationship.isOrdered = element.flag("ordered")
        applyVersioning(element, to: relationship)
        let rule = element.attributes["deletionRule"] ?? "Nullify"
        switch rule {
        case "Nullify": relationship.deleteRule = .nullifyDeleteRule
        case "Cascade": relationship.deleteRule = .cascadeDeleteRule
        case "Deny": relationship.deleteRule = .denyDeleteRule
        case "No Action": relationship.deleteRule = .noActionDeleteRule
        default: throw ModelFileError(.unknownDeleteRule(rule), url: url, line: element.line, entity: entity, property: name)
        }
        if element.flag("toMany") {
            relationship.maxCount = try count("maxCount", of: element, entity: entity, property: name) ?? 0
            relationship.minCount = try count("minCount", of: element, entity: entity, property: name) ?? 0
        } else {
            // A to-one's bounds are its optionality; Xcode writes minCount/maxCount 1 for it.
            relationship.maxCount = 1
        }
        return relationship
    }

    private func connectRelationships(
        of entity: NSEntityDescription, _ element: ModelFileElement, entities: [String: NSEntityDescription]
    ) throws(ModelFileError) {
        for child in element.children(named: "relationship") {
            guard let name = child.attributes["name"],
                let relationship = entity.properties.first(where: { $0.name == name }) as? NSRelationshipDescription
            else { continue }
            let destinationName = try required("destinationEntity", of: child, entity: entity.name, property: name)
            guard let destination = entities[destinationName] else {
                throw ModelFileError(.unknownDestination(destinationName), url: url, line: child.line, entity: entity.name, property: name)
            }
            relationship.destinationEntity = destination
            // A missing or wrong inverse is left for model validation to report, as for a
            // model built in code.
            if let inverseName = child.attributes["inverseName"] {
                relationship.inverseRelationship = destination.properties.first { $0.name == inverseName } as? NSRelationshipDescription
            }
        }
    }

    // MARK: Indexes and constraints

    private func applyIndexesAndConstraints(to entity: NSEntityDescription, _ element: ModelFileElement) throws(ModelFileError) {
        for index in element.children(named: "fetchIndex") {
            // The store keeps single-attribute indexes: a compound fetch index indexes its
            // first element, which serves fetches that test that attribute.
            guard let first = index.children(named: "fetchIndexElement").first else { continue }
            let property = try required("property", of: first, entity: entity.name)
            guard let attribute = entity.properties.first(where: { $0.name == property }) as? NSAttributeDescription else {
                throw ModelFileError(.unknownProperty(property), url: url, line: first.line, entity: entity.name, property: property)
            }
            attribute.isIndexed = true
        }
        var constraints: [[Any]] = []
        for list in element.children(named: "uniquenessConstraints") {
            for constraint in list.children(named: "uniquenessConstraint") {
                var names: [Any] = []
                for part in constraint.children(named: "constraint") {
                    let property = try required("value", of: part, entity: entity.name)
                    guard entity.properties.contains(where: { $0.name == property }) else {
                        throw ModelFileError(.unknownProperty(property), url: url, line: part.line, entity: entity.name, property: property)
                    }
                    names.append(property)
                }
                if !names.isEmpty { constraints.append(names) }
            }
        }
        if !constraints.isEmpty { entity.uniquenessConstraints = constraints }
    }

    // MARK: Building blocks

    /// Xcode writes a renaming identifier as `elementID` (older files: `renamingIdentifier`).
    private static func renamingIdentifier(of element: ModelFileElement) -> String? {
        element.attributes["elementID"] ?? element.attributes["renamingIdentifier"]
    }

    private func applyVersioning(_ element: ModelFileElement, to property: NSPropertyDescription) {
        property.renamingIdentifier = Self.renamingIdentifier(of: element)
        property.versionHashModifier = element.attributes["versionHashModifier"]
    }

    private func required(
        _ attribute: String, of element: ModelFileElement, entity: String?, property: String? = nil
    ) throws(ModelFileError) -> String {
        guard let value = element.attributes[attribute], !value.isEmpty else {
            throw ModelFileError(.missingXMLAttribute(attribute), url: url, line: element.line, entity: entity, property: property)
        }
        return value
    }

    private func count(_ attribute: String, of element: ModelFileElement, entity: String, property: String) throws(ModelFileError) -> Int? {
        guard let text = element.attributes[attribute] else { return nil }
        guard let value = Int(text), value >= 0 else {
            throw ModelFileError(.invalidNumber(attribute), url: url, line: element.line, entity: entity, property: property)
        }
        return value
    }
}
