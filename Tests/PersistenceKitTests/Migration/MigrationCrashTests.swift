import Foundation
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
    import Glibc
#endif

/// A process killed with SIGKILL at a random moment of a migration leaves a store that
/// opens as the old version (and migrates again) or as the new one, with every object.
@Suite("A process killed while migrating loses nothing", .serialized) struct MigrationCrashTests {
    typealias S = MigrationSupport
    static let kills = 100
    static let writers = 400

    @Test func killedWhileMigrating() async throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", S.v1), ("V2", S.v2)], current: "V2")
        let v1 = try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel"))
        let v2 = try NSManagedObjectModel(modelFileAt: bundle)
        let (v1Hash, v2Hash) = (v1.layoutHashString, v2.layoutHashString)
        var (before, after) = (0, 0)
        for iteration in 0..<Self.kills {
            try? FileStore.destroy(at: folder.storeURL)
            try Self.seed(folder.storeURL, model: v1)
            let delay = UInt32.random(in: 0...(iteration % 2 == 0 ? 40_000 : 150_000))
            await #expect(processExitsWith: .signal(SIGKILL)) {
                [path = folder.storeURL.path as String, bundle = bundle.path as String, delay = delay as UInt32] in
                try MigrationCrashTests.child(path: path, bundle: bundle, delayMicroseconds: delay)
            }
            let hash = try FileStore.metadata(at: folder.storeURL)[PersistenceKitModelLayoutHashKey]
            #expect(hash == v1Hash || hash == v2Hash, "kill \(iteration): the store is at neither version")
            if hash == v1Hash { before += 1 } else { after += 1 }
            // Whatever the version, loading with the current model gives every object.
            let container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
            let context = container.newBackgroundContext()
            let names = try context.performAndWait {
                Set(try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")).compactMap { $0.value(forKey: "fullName") as? String })
            }
            try FSSupport.close(container)
            #expect(names.count == Self.writers, "kill \(iteration): \(names.count) of \(Self.writers) objects after the kill")
            if names.count != Self.writers { return }
        }
        print("MigrationCrashTests: \(Self.kills) kills, \(before) left the old version, \(after) the new one")
    }

    /// The same for a migration that rewrites nothing (new entities sorting before and
    /// between old ones: the sidecar maps the file's entity numbers): killed around the
    /// sidecar's write, the store opens as either version with every object and link.
    @Test func killedWhileMigratingWithoutARewrite() async throws {
        typealias N = EntityNumberingMigrationTests
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", N.v1), ("V2", N.v2)], current: "V2")
        let v1 = try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel"))
        let v2 = try NSManagedObjectModel(modelFileAt: bundle)
        let (v1Hash, v2Hash) = (v1.layoutHashString, v2.layoutHashString)
        var (before, after) = (0, 0)
        for iteration in 0..<(Self.kills / 2) {
            try? FileStore.destroy(at: folder.storeURL)
            try N.seed(folder.storeURL, model: v1)
            let inode = try FileManager.default.attributesOfItem(atPath: folder.storeURL.path)[.systemFileNumber] as? NSNumber
            let delay = UInt32.random(in: 0...15_000)
            await #expect(processExitsWith: .signal(SIGKILL)) {
                [path = folder.storeURL.path as String, bundle = bundle.path as String, delay = delay as UInt32] in
                try MigrationCrashTests.child(path: path, bundle: bundle, delayMicroseconds: delay)
            }
            let hash = try FileStore.metadata(at: folder.storeURL)[PersistenceKitModelLayoutHashKey]
            #expect(hash == v1Hash || hash == v2Hash, "kill \(iteration): the store is at neither version")
            if hash == v1Hash { before += 1 } else { after += 1 }
            let container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
            #expect(try FileManager.default.attributesOfItem(atPath: folder.storeURL.path)[.systemFileNumber] as? NSNumber == inode)
            let links = try N.links(container)
            try FSSupport.close(container)
            #expect(links == N.seeded, "kill \(iteration): the objects and links read differently after the kill")
            if links != N.seeded { return }
        }
        print("MigrationCrashTests without a rewrite: \(Self.kills / 2) kills, \(before) left the old version, \(after) the new one")
    }

    static func seed(_ url: URL, model: NSManagedObjectModel) throws {
        let container = try S.container(at: url, model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let entity = try #require(model.entitiesByName["Writer"])
            for i in 0..<writers {
                let writer = NSManagedObject(entity: entity, insertInto: context)
                writer.setValue("writer \(i)", forKey: "name")
                writer.setValue(Int16(i % 100), forKey: "age")
            }
            try context.save()
        }
        try FSSupport.close(container)
    }

    /// Runs in the child process: arms a SIGKILL, loads (and so migrates) the store, and
    /// waits to be killed.
    static func child(path: String, bundle: String, delayMicroseconds: UInt32) throws {
        let model = try NSManagedObjectModel(modelFileAt: URL(fileURLWithPath: bundle))
        DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int(delayMicroseconds))) {
            kill(getpid(), SIGKILL)
        }
        _ = try S.container(at: URL(fileURLWithPath: path), model: model)
        while true { usleep(1_000) }
    }
}
