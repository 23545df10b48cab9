import Foundation
import Synchronization
import Testing
@testable import PersistenceKit

@Suite struct ConcurrentUniquenessTests {
    /// Two contexts insert the same key; the first saves, then the second, which has not
    /// merged the first's save.
    private func secondSave(_ policy: NSMergePolicy, name: String = #function) throws -> (rows: [String], error: CoreDataError?, winner: NSManagedObjectID) {
        let container = try UCSupport.memoryContainer(name: name)
        let first = container.newBackgroundContext()
        let second = container.newBackgroundContext()
        second.performAndWait { second.mergePolicy = policy }
        second.performAndWait { _ = UCSupport.insertMember(second, email: "k@x", name: "Second", age: 2) }
        let winner = try first.performAndWait {
            let m = UCSupport.insertMember(first, email: "k@x", name: "First", age: 1)
            try first.save()
            return m.objectID
        }
        let error: CoreDataError? = second.performAndWait {
            do { try second.save() } catch let e as CoreDataError { return e } catch { Issue.record(error) }
            return nil
        }
        return (try UCSupport.members(container), error, winner)
    }

    @Test func secondSaveUnderErrorPolicyReportsTheWinnersRow() throws {
        let (rows, error, winner) = try secondSave(.error)
        #expect(rows == ["k@x|First|1"])
        #expect(error?.constraintConflicts.first?.databaseObject == winner)
    }

    @Test func secondSaveUnderObjectTrumpUpdatesTheWinnersRow() throws {
        let (rows, error, _) = try secondSave(.mergeByPropertyObjectTrump)
        #expect(error == nil)
        #expect(rows == ["k@x|Second|2"])
    }

    @Test func secondSaveUnderStoreTrumpKeepsTheWinnersRow() throws {
        let (rows, error, _) = try secondSave(.mergeByPropertyStoreTrump)
        #expect(error == nil)
        #expect(rows == ["k@x|First|1"])
    }

    @Test(arguments: [false, true]) func concurrentSavesOfOneKeyLeaveOneRow(_ inFile: Bool) throws {
        let folder = try TemporaryFolder("concurrentSaves\(inFile)")
        let container = inFile ? try UCSupport.fileContainer(at: folder.storeURL) : try UCSupport.memoryContainer()
        let saved = Mutex(0)
        let refused = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let context = container.newBackgroundContext()
            context.performAndWait {
                // Half of them resolve by object trump, the others fail.
                if i % 2 == 0 { context.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy }
                UCSupport.insertMember(context, email: "same@x", name: "n\(i)", age: Int64(i))
                UCSupport.insertMember(context, email: "own\(i)@x", name: "n\(i)", age: Int64(i))
                do {
                    try context.save()
                    saved.withLock { $0 += 1 }
                } catch {
                    refused.withLock { $0 += 1 }
                }
            }
        }
        let rows = try UCSupport.members(container)
        #expect(rows.filter { $0.hasPrefix("same@x|") }.count == 1)
        #expect(Set(rows.map { $0.split(separator: "|")[0] }).count == rows.count)
        #expect(saved.withLock { $0 } + refused.withLock { $0 } == 8)
        #expect(saved.withLock { $0 } >= 4)  // every object-trump save goes through
        if inFile { try FSSupport.close(container) }
    }
}
