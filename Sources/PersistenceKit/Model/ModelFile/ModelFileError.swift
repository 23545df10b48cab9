import Foundation

/// A problem reading an Xcode model file (`.xcdatamodeld`, `.xcdatamodel` or its `contents`
/// XML): names the file, the line where the XML parser was, the entity and property
/// involved where there are ones, and what to change.
public struct ModelFileError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong.
    public enum Kind: Sendable, Equatable {
        /// Nothing at the URL, or a folder without the expected `contents` or
        /// `.xccurrentversion` file.
        case missingFile
        /// The `.xccurrentversion` file names no version, or a version the bundle lacks.
        case unknownCurrentVersion(String)
        /// The XML is not well formed (the parser's message).
        case malformedXML(String)
        /// The document's root element is not `<model>`.
        case notAModel(String)
        /// A required XML attribute (named) is missing from an element.
        case missingXMLAttribute(String)
        /// An attribute type the file names that Core Data does not define.
        case unknownAttributeType(String)
        /// A delete rule the file names that Core Data does not define.
        case unknownDeleteRule(String)
        /// A relationship names a destination entity the model does not have.
        case unknownDestination(String)
        /// An entity names a parent entity the model does not have.
        case unknownParentEntity(String)
        /// A composite attribute names a composite the model does not declare.
        case unknownComposite(String)
        /// A default value string does not convert to the attribute's type.
        case invalidDefaultValue(String)
        /// A fetch index or uniqueness constraint names a property the entity lacks.
        case unknownProperty(String)
        /// A number attribute (named) that is not an integer.
        case invalidNumber(String)
        /// An attribute's regular expression (`regularExpressionString`) that does not compile.
        case invalidRegularExpression(String)
    }

    /// What is wrong.
    public let kind: Kind
    /// The file being read.
    public let url: URL
    /// The 1-based line of the XML element involved, or 0 when the problem is not in the XML.
    public let line: Int
    /// The entity involved, if any.
    public let entity: String?
    /// The property involved, if any.
    public let property: String?

    init(_ kind: Kind, url: URL, line: Int = 0, entity: String? = nil, property: String? = nil) {
        self.kind = kind
        self.url = url
        self.line = line
        self.entity = entity
        self.property = property
    }

    /// A sentence saying what is wrong, where, and what to do.
    public var description: String {
        var place = url.path
        if line > 0 { place += ", line \(line)" }
        if let entity { place += ", entity '\(entity)'" + (property.map { ", property '\($0)'" } ?? "") }
        let what: String
        switch kind {
        case .missingFile:
            what = "no model file there: give a .xcdatamodeld folder, a .xcdatamodel folder, or the 'contents' file inside one"
        case let .unknownCurrentVersion(name):
            what = "the current version '\(name)' named by .xccurrentversion is not in the bundle: set it in Xcode or fix the file"
        case let .malformedXML(message):
            what = "the XML is not well formed (\(message))"
        case let .notAModel(root):
            what = "the root element is <\(root)>, not <model>: this is not a Core Data model file"
        case let .missingXMLAttribute(name):
            what = "the element lacks its '\(name)' attribute"
        case let .unknownAttributeType(type):
            what = "attribute type '\(type)' is not a Core Data type (Integer 16/32/64, Decimal, Double, Float, String, Boolean, Date, Binary, UUID, URI, Transformable, Composite)"
        case let .unknownDeleteRule(rule):
            what = "delete rule '\(rule)' is not one of Nullify, Cascade, Deny, No Action"
        case let .unknownDestination(name):
            what = "the destination entity '\(name)' is not in the model"
        case let .unknownParentEntity(name):
            what = "the parent entity '\(name)' is not in the model"
        case let .unknownComposite(name):
            what = "the composite '\(name)' is not declared in the model"
        case let .invalidDefaultValue(value):
            what = "the default value '\(value)' does not convert to the attribute's type"
        case let .unknownProperty(name):
            what = "'\(name)' is not a property of the entity"
        case let .invalidNumber(name):
            what = "'\(name)' is not an integer"
        case let .invalidRegularExpression(pattern):
            what = "the regular expression '\(pattern)' does not compile"
        }
        return "PersistenceKit: cannot read the model file \(place): \(what)."
    }
}
