/// A Swift `NSManagedObject` subclass gets a typed fetch request.
public protocol NSManagedObjectFetchable: NSManagedObject {}

extension NSManagedObject: NSManagedObjectFetchable {}

extension NSManagedObjectFetchable {
    /// A fetch request for this class's entity, returning objects of this class.
    public static func fetchRequest() -> NSFetchRequest<Self> {
        NSFetchRequest<Self>(entityClass: Self.self)
    }
}
