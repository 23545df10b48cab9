import Foundation

extension NSManagedObjectModel {
    /// The models built by ``makeRuntimeModel(_:)-(Array<NSManagedObject.Type>)``, by their
    /// set of classes.
    private static let runtimeModels = Lock<[Set<ObjectIdentifier>: NSManagedObjectModel]>([:])

    /// The model of `classes`, built once per set of classes in a process and then reused:
    /// every later call with the same classes (in any order) returns the same instance, so
    /// `entity()` and `fetchRequest()` of a class agree across the containers and tests that
    /// use it (CoreDataEvolution's `makeRuntimeModel` caches the same way). A class list that
    /// fails to build is not cached.
    ///
    /// - Throws: ``ModelError`` for an invalid model.
    public static func makeRuntimeModel(_ classes: [NSManagedObject.Type]) throws(ModelError) -> NSManagedObjectModel {
        let key = Set(classes.map { ObjectIdentifier($0) })
        if let model = runtimeModels.withLock({ $0[key] }) { return model }
        let built = try NSManagedObjectModel(managedObjectClasses: classes)
        // Two threads may build the same list at once: the first stored wins, so every
        // caller gets one instance.
        return runtimeModels.withLock { models in
            if let existing = models[key] { return existing }
            models[key] = built
            return built
        }
    }

    /// ``makeRuntimeModel(_:)-(Array<NSManagedObject.Type>)`` with the classes listed one
    /// by one.
    ///
    /// - Throws: ``ModelError`` for an invalid model.
    public static func makeRuntimeModel(_ classes: NSManagedObject.Type...) throws(ModelError) -> NSManagedObjectModel {
        try makeRuntimeModel(classes)
    }
}
