import Foundation
import Testing
@testable import PersistenceKit

// The model of the uniqueness constraint suites: members unique by email (a single-attribute
// constraint from `@Attribute(.unique)`), editions unique by title and year together.

final class UCMember: NSManagedObject {
    @Attribute(.unique) var email: String = ""
    @Attribute var name: String = ""
    @Attribute var age: Int64 = 0
}

final class UCEdition: NSManagedObject, UniquenessConstrained {
    static let uniquenessConstraints = [["title", "year"]]
    @Attribute var title: String = ""
    @Attribute var year: Int64 = 0
    @Attribute var note: String?
}

enum UCSupport {
    static func model() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [UCMember.self, UCEdition.self])
    }

    /// A container with an in-memory store of its own.
    static func memoryContainer(name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try model())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        return container
    }

    /// A container on the file store at `url`.
    static func fileContainer(at url: URL, name: String = #function) throws -> NSPersistentContainer {
        try FSSupport.container(at: url, model: model(), name: name)
    }

    /// Every saved member as "email|name|age", sorted, read by a fresh context.
    static func members(_ container: NSPersistentContainer) throws -> [String] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            try context.fetch(NSFetchRequest<UCMember>(entityName: "UCMember")).map { "\($0.email)|\($0.name)|\($0.age)" }.sorted()
        }
    }

    /// Every saved edition as "title|year|note", sorted, read by a fresh context.
    static func editions(_ container: NSPersistentContainer) throws -> [String] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            try context.fetch(NSFetchRequest<UCEdition>(entityName: "UCEdition")).map { "\($0.title)|\($0.year)|\($0.note ?? "-")" }
                .sorted()
        }
    }

    /// Saves one member in a context of its own.
    static func saveMember(_ container: NSPersistentContainer, email: String, name: String, age: Int64) throws {
        let context = container.newBackgroundContext()
        try context.performAndWait {
            insertMember(context, email: email, name: name, age: age)
            try context.save()
        }
    }

    @discardableResult
    static func insertMember(_ context: NSManagedObjectContext, email: String, name: String, age: Int64 = 0) -> UCMember {
        let m = UCMember(context: context)
        m.email = email
        m.name = name
        m.age = age
        return m
    }
}
