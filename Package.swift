// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "PersistenceKit",
    // Synchronization (Atomic, Mutex) needs macOS 15 on Apple platforms.
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PersistenceKit", targets: ["PersistenceKit"]),
        .library(name: "ModelActorKit", targets: ["ModelActorKit"]),
        // Prints a store file's header, records and checksums (and, with a model file, its
        // entities' counts) without opening it: `swift run pkstore <store> [--model <file>]`.
        .executable(name: "pkstore", targets: ["pkstore"]),
        // For the tests of store implementations, not for apps: the behaviour checks every
        // store passes (insert, fetch, relationships, conflicts, batch requests, ...), written
        // with Swift Testing and parameterised by the store under test. The file and in-memory
        // stores run them in PersistenceKitTests, the PostgreSQL store in its own package.
        .library(name: "PersistenceKitStoreBehaviour", targets: ["PersistenceKitStoreBehaviour"]),
    ],
    // No package dependencies. The benchmarks, which link SQLite for their baselines, are a
    // package of their own in Benchmarks/.
    targets: [
        .target(name: "PersistenceKit"),
        .target(name: "ModelActorKit", dependencies: ["PersistenceKit"]),
        .executableTarget(name: "pkstore", dependencies: ["PersistenceKit"]),
        .executableTarget(
            name: "Bookshelf",
            dependencies: ["PersistenceKit"],
            path: "Examples/Bookshelf"
        ),
        .executableTarget(
            name: "ItemsImport",
            dependencies: ["ModelActorKit"],
            path: "Examples/ItemsImport"
        ),
        .executableTarget(
            name: "ObservedNotes",
            dependencies: ["ModelActorKit"],
            path: "Examples/ObservedNotes"
        ),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .target(name: "PersistenceKitStoreBehaviour", dependencies: ["PersistenceKit"], path: "Tests/StoreBehaviour"),
        // Built for release by CI, so that a test can check that traps print their messages
        // under -O (see Tests/PersistenceKitTests/Support/ReleaseTrapMessageTests.swift).
        .executableTarget(
            name: "TrapMessages",
            dependencies: ["PersistenceKit"],
            path: "Tests/TrapMessages"
        ),
        .testTarget(
            name: "PersistenceKitTests", dependencies: ["PersistenceKit", "TestSupport", "PersistenceKitStoreBehaviour"],
            // Xcode model files written by hand in Xcode's format, read by the model-file tests.
            resources: [.copy("Model/ModelFileFixtures")]),
        .testTarget(name: "ModelActorKitTests", dependencies: ["ModelActorKit", "TestSupport"]),
        // Compiled as a new app target is (Swift 6.2's default MainActor isolation), so that a
        // model and its use keep compiling there.
        .testTarget(
            name: "DefaultMainActorTests",
            dependencies: ["ModelActorKit"],
            swiftSettings: [.defaultIsolation(MainActor.self)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
