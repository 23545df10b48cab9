// `import ModelActorKit` is enough: it re-exports PersistenceKit.
@_exported import PersistenceKit
