import Foundation
import Testing
@testable import PersistenceKit

// Asynchronous fetches: the completion runs on the context's queue with the results, and a
// fetch cancelled before it runs ends without results and with the cancellation error.

/// What a completion saw, as Sendable values.
private struct FetchOutcome: Sendable {
    var titles: [String]?
    var errorCode: CoreDataError.Code?
    var onQueue: Bool
    var progressDone: Bool
}

@Suite struct AsynchronousFetchTests {
    private static func seeded() throws -> NSManagedObjectContext {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            FRFixtures.note("b", "c", rank: 2, in: context)
            FRFixtures.note("a", "c", rank: 1, in: context)
            try context.save()
        }
        return context
    }

    /// Executes an asynchronous fetch of the notes ordered by rank; `before` runs on the
    /// queue with the result, right after `execute` returned it.
    private static func run(
        _ context: NSManagedObjectContext, before: @escaping (NSAsynchronousFetchResult<FRNote>) -> Void = { _ in }
    ) async throws -> FetchOutcome {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<FetchOutcome, any Error>) in
            context.performAndWait {
                let request = FRFixtures.request()
                let asynchronous = NSAsynchronousFetchRequest(fetchRequest: request) { [context] result in
                    continuation.resume(
                        returning: FetchOutcome(
                            titles: result.finalResult?.map(\.title),
                            errorCode: (result.operationError as? CoreDataError)?.code,
                            onQueue: context.queue.isCurrent,
                            progressDone: result.progress?.isFinished == true))
                }
                do {
                    let result = try context.execute(asynchronous)
                    #expect(result.finalResult == nil)  // runs later
                    before(result)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    @Test func theCompletionGetsTheResultsOnTheContextsQueue() async throws {
        let context = try Self.seeded()
        let outcome = try await Self.run(context)
        #expect(outcome.titles == ["a", "b"])
        #expect(outcome.errorCode == nil)
        #expect(outcome.onQueue)
        #expect(outcome.progressDone)
    }

    @Test func aFetchCancelledBeforeItRunsEndsWithoutResults() async throws {
        let context = try Self.seeded()
        let outcome = try await Self.run(context) { $0.cancel() }
        #expect(outcome.titles == nil)
        #expect(outcome.errorCode == .userCancelled)
        #expect(CoreDataError.Code.userCancelled.rawValue == 3072)
        #expect(!outcome.progressDone)
    }

    @Test func cancellingTheProgressCancelsTheFetch() async throws {
        let context = try Self.seeded()
        let outcome = try await Self.run(context) { $0.progress?.cancel() }
        #expect(outcome.titles == nil)
        #expect(outcome.errorCode == .userCancelled)
    }

    @Test func anUnknownEntityIsRefusedAtOnce() throws {
        let context = try Self.seeded()
        context.performAndWait {
            let request = NSAsynchronousFetchRequest(fetchRequest: NSFetchRequest<NSManagedObject>(entityName: "Nothing")) { _ in
                #expect(Bool(false), "the completion of a refused request ran")
            }
            #expect(throws: CoreDataError.self) { try context.execute(request) }
        }
    }
}
