import Observation

/// A managed object class whose properties Swift Observation can track.
///
/// ```swift
/// final class Item: NSManagedObject, ObservableManagedObject {
///     @Attribute var title: String = ""
///     @Relationship(inverse: "items") var tag: Tag?
/// }
///
/// withObservationTracking { _ = item.title } onChange: { print("title changed") }
/// ```
///
/// Conforming is the whole opt-in: no macro, no registrar to declare. Reads of the class's
/// `@Attribute` and `@Relationship` properties (and of a to-many's `count`, `isEmpty`,
/// `objects` and `contains(_:)` through its projected value, `item.$tags.count`) report to
/// Observation; a computed property is observable through the properties it reads.
///
/// # What wakes a reader
/// Only saved changes, routed by a live ``CDEObservationDomain`` into its container's
/// `viewContext`: setting a property does not notify (invalidation is save-gated), and a
/// reader is woken only for the properties a save changed when the save's producer reports
/// them (see ``CDEObservationDomain`` for each producer's precision). Objects in other
/// contexts, and objects of a container without a domain, are readable but never tracked.
///
/// Classes that do not conform do no Observation work at all.
public protocol ObservableManagedObject: NSManagedObject, Observable {}

/// The subject Observation records a managed object's property reads against.
///
/// Observation identifies what a reader read by (registrar, key path). Every observed object
/// has a registrar of its own (`NSManagedObject.observationRegistrar`), so a key path needs
/// to name only the property: `\ObservedProperty.[slot: i]`, for the property at storage
/// index `i`. A reader of one object's `title` is therefore never woken by another object's,
/// nor by the same object's other properties.
struct ObservedProperty: Observable {
    /// The one value reads are recorded against (Observation does not look at it).
    static let subject = ObservedProperty()

    /// The storage index itself; the key path's argument is what identifies the property.
    subscript(slot slot: Int) -> Int { slot }

    /// Key paths of the first slots, made once: a key path with an argument is an allocation
    /// when made, and a read of an observed property must not pay one.
    // nonisolated(unsafe): `KeyPath` is not declared `Sendable`, but a key path object is
    // immutable once made, and these arrays are written once (by the lazy global
    // initializer, which runs exactly once under the runtime's lock) and only read afterwards.
    nonisolated(unsafe) private static let common: [KeyPath<ObservedProperty, Int>] = (0..<64).map { \ObservedProperty.[slot: $0] }
    /// The same key paths, unretained: `common` keeps them alive for the process, and lent
    /// from here a read takes no reference (a retain and a release per read otherwise).
    nonisolated(unsafe) private static let lent: [Unmanaged<KeyPath<ObservedProperty, Int>>] = common.map { Unmanaged.passUnretained($0) }

    /// Runs `body` with the key path that stands for slot `slot`.
    @inline(__always)
    static func withKeyPath<R>(slot: Int, _ body: (KeyPath<ObservedProperty, Int>) -> R) -> R {
        if slot < lent.count { return lent[slot]._withUnsafeGuaranteedRef(body) }
        return body(\ObservedProperty.[slot: slot])
    }
}
