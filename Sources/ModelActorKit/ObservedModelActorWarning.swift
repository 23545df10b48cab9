import Foundation
import Synchronization

/// The one-time warning of `NSObservedModelActor.saveObservedChanges()` without a domain.
enum ObservedModelActorWarning {
    private static let warned = Atomic<Bool>(false)

    static func warnOnce() {
        guard !warned.exchange(true, ordering: .relaxed) else { return }
        FileHandle.standardError.write(
            Data(
                ("[CDEObservation] saveObservedChanges() ran on a model actor without an active producer registration "
                    + "(made without an observation domain, or its registration was invalidated): "
                    + "it saved as a plain save, so readers of every property of the saved objects are woken. Make the "
                    + "actor with init(observationDomain:) for property-level routes.\n").utf8))
    }
}
