// swift-tools-version:6.2
import PackageDescription

// The benchmarks: a package of their own, so that their baselines can link what the library
// must not (SQLite), while the root package keeps zero dependencies.
//
//   swift run -c release --package-path Benchmarks StoreBenchmark
//
// SQLite comes from the system (`libsqlite3-dev` on Debian and Ubuntu, `sqlite` from
// Homebrew); only the benchmark executables link it.
let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "PersistenceKit", path: "..")
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // The clock both sides of every comparison read, and running this executable afresh.
        .target(name: "BenchmarkSupport"),
        // Raw SQLite doing the benchmarks' work, through the C API.
        .target(name: "SQLiteBaseline", dependencies: ["CSQLite", "BenchmarkSupport"]),
        .executableTarget(
            name: "StoreBenchmark",
            dependencies: [.product(name: "PersistenceKit", package: "PersistenceKit"), "SQLiteBaseline", "BenchmarkSupport"]
        ),
        .executableTarget(
            name: "QueryBenchmark",
            dependencies: [.product(name: "PersistenceKit", package: "PersistenceKit"), "SQLiteBaseline", "BenchmarkSupport"]
        ),
        .executableTarget(
            name: "MigrationBenchmark",
            dependencies: [.product(name: "PersistenceKit", package: "PersistenceKit"), "SQLiteBaseline", "BenchmarkSupport"]
        ),
        .executableTarget(
            name: "ObservationBenchmark",
            dependencies: [.product(name: "PersistenceKit", package: "PersistenceKit"), "BenchmarkSupport"]
        ),
        .executableTarget(
            name: "ExecutorBenchmark",
            dependencies: [.product(name: "ModelActorKit", package: "PersistenceKit")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
