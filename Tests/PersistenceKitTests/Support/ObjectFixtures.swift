import Foundation
import Testing
import PersistenceKit

enum OTSupport {
    static let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    static let date = Date(timeIntervalSinceReferenceDate: 123_456.789)
    static let url = URL(string: "https://example.com/path?q=1#frag")!
    static let decimal = Decimal(string: "12345.6789")!

    static func container(_ classes: [NSManagedObject.Type], name: String = #function) throws -> NSPersistentContainer {
        try container(model: NSManagedObjectModel(managedObjectClasses: classes), name: name)
    }

    static func container(model: NSManagedObjectModel, name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    /// A model built by hand, used with plain `NSManagedObject`: Note (title, count, weight,
    /// flag, tag?) ←→ Folder (notes).
    static func handModel() -> NSManagedObjectModel {
        func attr(_ name: String, _ type: NSAttributeType, optional: Bool = true, default value: Any? = nil)
            -> NSAttributeDescription
        {
            let a = NSAttributeDescription(name: name, type: type)
            a.isOptional = optional
            a.defaultValue = value
            return a
        }
        let note = NSEntityDescription()
        note.name = "Note"
        let folder = NSEntityDescription()
        folder.name = "Folder"
        let notes = NSRelationshipDescription(name: "notes")
        notes.maxCount = 0
        let folderRel = NSRelationshipDescription(name: "folder")
        notes.destinationEntity = note
        notes.inverseRelationship = folderRel
        folderRel.destinationEntity = folder
        folderRel.inverseRelationship = notes
        note.properties = [
            attr("title", .stringAttributeType, optional: false, default: "untitled"),
            attr("count", .integer16AttributeType, optional: false, default: 0),
            attr("weight", .doubleAttributeType),
            attr("flag", .booleanAttributeType, optional: false, default: false),
            attr("tag", .UUIDAttributeType),
            folderRel,
        ]
        folder.properties = [attr("name", .stringAttributeType, optional: false, default: ""), notes]
        return NSManagedObjectModel(entities: [note, folder])
    }
}
