import Foundation
import Testing
@testable import PersistenceKit
import TestSupport

/// A staged migration moves a store through several model versions in one load, running
/// custom stages' code around the inferred row migration.
@Suite("Staged migration") struct StagedMigrationTests {
    typealias S = MigrationSupport

    /// Models of the three versions, read from a bundle each (so that no bundle supplies the
    /// versions: the stages must).
    static func models(in folder: URL) throws -> [NSManagedObjectModel] {
        try [("V1", S.v1), ("V2", S.v2), ("V3", S.v3)].map { name, xml in
            let bundle = try S.bundle(in: folder.appendingPathComponent(name), versions: [(name, xml)], current: name)
            return try NSManagedObjectModel(modelFileAt: bundle)
        }
    }

    static func reference(_ model: NSManagedObjectModel) -> NSManagedObjectModelReference {
        NSManagedObjectModelReference(model: model, versionChecksum: model.versionChecksum)
    }

    @Test func aCustomStageFillsANewRequiredAttribute() throws {
        let folder = try TemporaryFolder()
        let models = try Self.models(in: folder.url)
        try S.seedVersion1(at: folder.storeURL, model: models[0])

        let events = TestMutex<[String]>([])
        let first = NSCustomMigrationStage(migratingFrom: Self.reference(models[0]), to: Self.reference(models[1]))
        first.willMigrateHandler = { manager, _ in
            let context = try #require(manager.container).newBackgroundContext()
            let count = try context.performAndWait { try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Writer")) }
            events.withLock { $0.append("will v1: \(count) writers") }
        }
        first.didMigrateHandler = { manager, _ in
            // The new optional email, filled from the name: what a custom stage is for.
            let context = try #require(manager.container).newBackgroundContext()
            try context.performAndWait {
                for author in try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")) {
                    let name = author.value(forKey: "fullName") as? String ?? ""
                    author.setValue("\(name.lowercased())@example.com", forKey: "email")
                }
                try context.save()
            }
            events.withLock { $0.append("did v2") }
        }
        let manager = NSStagedMigrationManager([
            first,
            NSLightweightMigrationStage([models[1].versionChecksum, models[2].versionChecksum]),
        ])
        let container = try S.container(at: folder.storeURL, model: models[2], staged: manager)
        #expect(events.withLock { $0 } == ["will v1: 2 writers", "did v2"])
        #expect(manager.container == nil)
        let context = container.newBackgroundContext()
        let emails = try context.performAndWait {
            try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")).compactMap { $0.value(forKey: "email") as? String }.sorted()
        }
        #expect(emails == ["ada@example.com", "bob@example.com"])
        try FSSupport.close(container)
    }

    @Test func aStoreAtAnIntermediateVersionStartsThere() throws {
        let folder = try TemporaryFolder()
        let models = try Self.models(in: folder.url)
        try S.seedVersion1(at: folder.storeURL, model: models[0])
        // Migrated to v2 by one load, then to v3 by a manager that lists all three.
        try FSSupport.close(try S.container(at: folder.storeURL, model: models[1], staged: NSStagedMigrationManager([
            NSCustomMigrationStage(migratingFrom: Self.reference(models[0]), to: Self.reference(models[1])),
        ])))
        let ran = TestMutex(0)
        let first = NSCustomMigrationStage(migratingFrom: Self.reference(models[0]), to: Self.reference(models[1]))
        first.willMigrateHandler = { _, _ in ran.withLock { $0 += 1 } }
        let second = NSCustomMigrationStage(migratingFrom: Self.reference(models[1]), to: Self.reference(models[2]))
        second.didMigrateHandler = { _, _ in ran.withLock { $0 += 10 } }
        let container = try S.container(at: folder.storeURL, model: models[2], staged: NSStagedMigrationManager([first, second]))
        #expect(ran.withLock { $0 } == 10, "only the stage from the store's version ran")
        try FSSupport.close(container)
    }

    @Test func aHandlerThatThrowsLeavesTheStoreAtItsVersion() throws {
        struct Refused: Error {}
        let folder = try TemporaryFolder()
        let models = try Self.models(in: folder.url)
        try S.seedVersion1(at: folder.storeURL, model: models[0])
        let stage = NSCustomMigrationStage(migratingFrom: Self.reference(models[0]), to: Self.reference(models[1]))
        stage.willMigrateHandler = { _, _ in throw Refused() }
        let error = #expect(throws: CoreDataError.self) {
            _ = try S.container(at: folder.storeURL, model: models[1], staged: NSStagedMigrationManager([stage]))
        }
        #expect((error?.underlying as? MigrationError)?.kind == .handlerFailed)
        let again = try S.container(at: folder.storeURL, model: models[0])
        try FSSupport.close(again)
    }

    @Test func aLightweightStageNamingAnUnknownChecksumIsTyped() throws {
        let folder = try TemporaryFolder()
        let models = try Self.models(in: folder.url)
        try S.seedVersion1(at: folder.storeURL, model: models[0])
        let error = #expect(throws: CoreDataError.self) {
            _ = try S.container(at: folder.storeURL, model: models[1], staged: NSStagedMigrationManager([NSLightweightMigrationStage(["nope"])]))
        }
        #expect((error?.underlying as? MigrationError)?.kind == .invalidStages("nope"))
    }
}
