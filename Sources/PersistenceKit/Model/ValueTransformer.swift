import Foundation

/// Turns values into the bytes a transformable attribute stores, and back: Foundation's
/// `ValueTransformer`, which Linux Foundation lacks, with the part Core Data uses.
///
/// Subclass it, override ``transformedValue(_:)`` (value → `Data`) and
/// ``reverseTransformedValue(_:)`` (`Data` → value), and register an instance under the
/// name a transformable attribute gives as its ``NSAttributeDescription/valueTransformerName``
/// before a context reads or writes the attribute:
///
/// ```swift
/// final class ColorTransformer: ValueTransformer, @unchecked Sendable {  // no stored state
///     override func transformedValue(_ value: Any?) -> Any? { (value as? Color).map { Data($0.hex.utf8) } }
///     override func reverseTransformedValue(_ value: Any?) -> Any? { (value as? Data).flatMap(Color.init(hexBytes:)) }
/// }
/// ValueTransformer.setValueTransformer(ColorTransformer(), forName: "ColorTransformer")
/// ```
///
/// On Apple platforms, where Foundation has its own, write `PersistenceKit.ValueTransformer`.
///
/// # Thread safety
/// Contexts on any queue call a registered transformer, as Core Data does: a subclass must
/// be safe to call from several threads at once (a transformer without mutable state is),
/// and restates `@unchecked Sendable`, as Swift requires of a subclass of such a class.
/// The registry is guarded by a lock.
open class ValueTransformer: @unchecked Sendable {
    // @unchecked Sendable: this class has no stored state; a subclass's state is its own to
    // guard, as the type's contract above requires (Foundation's transformers are shared
    // across threads the same way).

    /// Creates a transformer.
    public init() {}

    /// Whether ``reverseTransformedValue(_:)`` is available: `true` unless overridden (a
    /// transformable attribute needs both directions).
    open class func allowsReverseTransformation() -> Bool { true }

    /// The stored form of `value`: `Data` for a transformable attribute, or `nil` when the
    /// value cannot be stored. The default returns `value`.
    open func transformedValue(_ value: Any?) -> Any? { value }

    /// The value that `value` (stored bytes) stands for, or `nil` when they do not decode.
    /// The default returns `value`.
    open func reverseTransformedValue(_ value: Any?) -> Any? { value }

    private static let registry = Lock<[String: ValueTransformer]>([:])

    /// Registers `transformer` under `name`, replacing any registered before; `nil`
    /// removes the registration.
    public static func setValueTransformer(_ transformer: ValueTransformer?, forName name: String) {
        registry.withLock { $0[name] = transformer }
    }

    /// The transformer registered under `name`, or `nil` (Foundation's
    /// `ValueTransformer(forName:)`).
    public static func valueTransformer(forName name: String) -> ValueTransformer? {
        registry.withLock { $0[name] }
    }

    /// The names transformers are registered under.
    public static func valueTransformerNames() -> [String] {
        registry.withLock { Array($0.keys).sorted() }
    }
}
