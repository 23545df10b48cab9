import Foundation
import Observation

/// The state of a managed object that few objects have: an Observation registrar (objects
/// read by a tracked observer) and the order of ordered to-many relationships (objects of
/// entities that have them). Kept behind one optional reference in the object
/// (`NSManagedObject.extras`), allocated when the first of it is set, so that every other
/// object, the ones a fetch makes by the thousand, carries one pointer instead of one
/// field per kind of rare state.
///
/// Not `Sendable`: like its object, used only on the object's context's queue.
final class ObjectExtras {
    /// See `NSManagedObject.observationRegistrar`.
    @exclusivity(unchecked) var observationRegistrar: ObservationRegistrar?
    /// See `NSManagedObject.toManyOrders`.
    @exclusivity(unchecked) var toManyOrders: [Int: [ObjectIdentifier]]?

    init(observationRegistrar: ObservationRegistrar? = nil) {
        self.observationRegistrar = observationRegistrar
    }
}
