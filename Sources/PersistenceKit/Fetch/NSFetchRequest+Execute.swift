import Foundation

extension NSFetchRequest {
    /// Fetches with the context whose `perform` or `performAndWait` block is running on
    /// this thread, as Core Data's `execute()` fetches in the current context: the same as
    /// `context.fetch(self)` in that block.
    ///
    /// - Throws: ``CoreDataError`` `.coreData` when no context's block is running here (in
    ///   a model actor's method, or on the main thread outside `perform`, call
    ///   `modelContext.fetch(_:)` or `viewContext.fetch(_:)`); the fetch's errors otherwise.
    public func execute() throws -> [ResultType] {
        guard let context = CurrentContext.context else {
            throw CoreDataError(
                .coreData,
                "execute() fetches in the context whose perform or performAndWait block is running, and none is running on "
                    + "this thread; call it inside context.perform { }, or call context.fetch(request).")
        }
        return try context.fetch(self)
    }
}
