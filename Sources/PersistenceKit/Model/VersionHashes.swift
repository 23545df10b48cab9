import Foundation

// Version hashes as Core Data defines what enters them: only what changes how data is
// stored, plus the user's `versionHashModifier`. Class names, default values, indexes and
// delete rules stay out, so changing them does not make a store incompatible. The digest is
// SHA-256 over the fields, each length-prefixed so that no two field lists read the same;
// the bytes are this library's own (Core Data's exact encoding is not published), so
// compare hashes made by PersistenceKit with each other.

extension NSPropertyDescription {
    /// The property's version hash: a 32-byte digest of its name, optionality and transient
    /// flag, its ``versionHashModifier``, and for an attribute its type (a composite's
    /// elements too), for a relationship its destination entity's and inverse's names, its
    /// counts and whether it is ordered. Two properties with equal hashes store data alike.
    public var versionHash: Data { SHA256.hash(VersionHashFields(versionHashFields).bytes) }

    var versionHashFields: [String] {
        var fields = [name, isOptional ? "optional" : "required", isTransient ? "transient" : "stored", versionHashModifier ?? ""]
        if let composite = self as? NSCompositeAttributeDescription {
            fields.append("\(composite.attributeType.rawValue)")
            for element in composite.elements { fields += element.versionHashFields }
        } else if let attribute = self as? NSAttributeDescription {
            fields.append("\(attribute.attributeType.rawValue)")
        } else if let relationship = self as? NSRelationshipDescription {
            fields += [
                relationship.destinationEntity?.name ?? "", relationship.inverseRelationship?.name ?? "",
                "\(relationship.minCount)", "\(relationship.maxCount)", relationship.isOrdered ? "ordered" : "unordered",
            ]
        }
        return fields
    }
}

extension NSEntityDescription {
    /// The entity's version hash, as Core Data's: a 32-byte digest of its name, whether it is
    /// abstract, its super-entity's version hash, the version hashes of its own properties
    /// (in any order) and its ``versionHashModifier``. The store keeps one per entity
    /// (`NSStoreModelVersionHashesKey`), and migration compares them to find what changed.
    public var versionHash: Data {
        var fields = [name, isAbstract ? "abstract" : "concrete", versionHashModifier ?? ""]
        fields.append(superentity.map { NSManagedObjectModel.hex($0.versionHash) } ?? "")
        let superProperties = Set((superentity?.properties ?? []).map(ObjectIdentifier.init))
        fields += properties.filter { !superProperties.contains(ObjectIdentifier($0)) }
            .map { NSManagedObjectModel.hex($0.versionHash) }.sorted()
        return SHA256.hash(VersionHashFields(fields).bytes)
    }
}

extension NSManagedObjectModel {
    /// Each entity's ``NSEntityDescription/versionHash`` by entity name, as Core Data's. Two
    /// models whose dictionaries are equal store data alike; the store metadata's
    /// `NSStoreModelVersionHashesKey` holds the dictionary of the model the store was written
    /// with.
    public var entityVersionHashesByName: [String: Data] {
        Dictionary(entities.map { ($0.name, $0.versionHash) }, uniquingKeysWith: { a, _ in a })
    }
}

/// Fields joined so that no two lists give the same bytes: each is prefixed by its length.
private struct VersionHashFields {
    let bytes: [UInt8]
    init(_ fields: [String]) {
        var bytes: [UInt8] = []
        for field in fields {
            bytes += Array("\(field.utf8.count):".utf8)
            bytes += Array(field.utf8)
        }
        self.bytes = bytes
    }
}
