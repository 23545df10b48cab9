import Foundation

extension NSManagedObjectModel {
    /// Reads the model an Xcode model file describes, as Core Data's `init?(contentsOf:)`:
    /// a `.xcdatamodeld` bundle (its current version, named by `.xccurrentversion`), a
    /// `.xcdatamodel` folder, or the `contents` XML inside one. Xcode's compiled `.momd`/`.mom`
    /// files are binary archives that only Apple's Core Data reads; give the source model.
    ///
    /// Returns `nil` when the file is missing or does not describe a model; use
    /// ``init(modelFileAt:managedObjectClasses:)`` to learn why. Entities whose
    /// `representedClassName` is module-qualified (`MyApp.Book`) get that class when the
    /// Swift runtime finds it; otherwise their objects are `NSManagedObject`s.
    public convenience init?(contentsOf url: URL) {
        guard let read = try? ModelFileReader(url: url, classes: []).read() else { return nil }
        self.init(entities: read.entities)
        if let identifier = read.versionIdentifier { versionIdentifiers = [identifier] }
        modelFileURL = url
    }

    /// Reads the model an Xcode model file describes (see ``init(contentsOf:)``), with the
    /// classes that represent its entities.
    ///
    /// An entity whose `representedClassName` names one of `managedObjectClasses` — with or
    /// without its module, and Xcode's `.Book` for "current product module" — has that class,
    /// so fetched objects are instances of it and its `@Attribute`/`@Relationship` properties
    /// read the entity's values by name. The model read this way equals (`==`) the model
    /// built from the same classes by ``init(managedObjectClasses:)`` when both declare the
    /// same entities, properties, indexes and constraints.
    ///
    /// - Throws: ``ModelFileError`` naming the file, the line, the entity and the property at
    ///   fault. Problems of the model itself (a relationship without an inverse, a default
    ///   value of the wrong type) are reported as ``ModelError`` when a coordinator loads it,
    ///   as for models built in code.
    public convenience init(modelFileAt url: URL, managedObjectClasses: [NSManagedObject.Type] = []) throws(ModelFileError) {
        let read = try ModelFileReader(url: url, classes: managedObjectClasses).read()
        self.init(entities: read.entities)
        if let identifier = read.versionIdentifier { versionIdentifiers = [identifier] }
        modelFileURL = url
    }
}
