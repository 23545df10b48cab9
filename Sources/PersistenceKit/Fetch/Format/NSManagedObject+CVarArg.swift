import Foundation

// Objects and object IDs are `CVarArg` so that they can be passed as `%@` to
// `NSPredicate(format:_:)`, which reads its arguments as Swift values, never through C
// variadic arguments. A C variadic function (`String(format:)`) given one sees a null pointer.

extension NSManagedObject: CVarArg {
    /// A null pointer: objects are `CVarArg` only to be passed as `%@` to
    /// `NSPredicate(format:_:)`, which compares them by identity.
    public var _cVarArgEncoding: [Int] { [0] }
}

extension NSManagedObjectID: CVarArg {
    /// A null pointer: IDs are `CVarArg` only to be passed as `%@` to
    /// `NSPredicate(format:_:)`, which compares them by value.
    public var _cVarArgEncoding: [Int] { [0] }
}
