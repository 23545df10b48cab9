/// Whether the view context treats a repeat of a just-routed change, arriving with object IDs
/// only, as an echo of that route.
///
/// A store or a chain of contexts that merges a save into the view context a second time
/// (the save itself with its changed properties, then its object IDs alone) would otherwise
/// widen a precise route into an all-properties one, waking readers of properties the save
/// never touched. With suppression on, each precise route arms a marker on its object; a
/// route of that object's ID alone within 2 seconds is skipped, and the view context's next
/// save clears every marker.
public enum CDEPreciseRouteEchoSuppression: Sendable {
    /// On where the container re-merges its own saves, off elsewhere. PersistenceKit's
    /// containers merge each save into other contexts once and never back into the context
    /// that saved it, so `.auto` is off for every container today.
    case auto
    /// Always on.
    case on
    /// Always off: an ID-only repeat wakes every reader of the object.
    case off

    /// The policy for `container`.
    func isOn(for container: NSPersistentContainer) -> Bool {
        switch self {
        case .on: true
        case .off: false
        case .auto: false
        }
    }
}
