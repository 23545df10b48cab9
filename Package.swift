// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "PersistenceKit",
    // Synchronization (Atomic, Mutex) needs macOS 15 on Apple platforms.
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PersistenceKit", targets: ["PersistenceKit"]),
        .library(name: "ModelActorKit", targets: ["ModelActorKit"]),
    ],
    targets: [
        .target(name: "PersistenceKit"),
        .target(name: "ModelActorKit", dependencies: ["PersistenceKit"]),
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
            name: "StoreBenchmark",
            dependencies: ["PersistenceKit"],
            path: "Benchmarks/StoreBenchmark"
        ),
        .executableTarget(
            name: "ExecutorBenchmark",
            dependencies: ["ModelActorKit"],
            path: "Benchmarks/ExecutorBenchmark"
        ),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "PersistenceKitTests", dependencies: ["PersistenceKit", "TestSupport"]),
        .testTarget(name: "ModelActorKitTests", dependencies: ["ModelActorKit", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
