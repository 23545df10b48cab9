// ModelActorKit re-exports PersistenceKit, so `import ModelActorKit` is enough. The model
// actor types (NSModelActor, NSMainModelActor, NSModelObjectContextExecutor) arrive with
// their own issue; see README's feature table.
@_exported import PersistenceKit
