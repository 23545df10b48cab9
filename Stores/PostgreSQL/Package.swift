// swift-tools-version:6.2
import PackageDescription

// The PostgreSQL store: a package of its own, so that the root package keeps zero
// dependencies and builds without libpq.
let package = Package(
    name: "PersistenceKitPostgreSQL",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PersistenceKitPostgreSQL", targets: ["PersistenceKitPostgreSQL"]),
    ],
    dependencies: [
        .package(name: "PersistenceKit", path: "../.."),
    ],
    targets: [
        // libpq, PostgreSQL's C client library, from the system.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        .target(
            name: "PersistenceKitPostgreSQL",
            dependencies: ["CLibPQ", .product(name: "PersistenceKit", package: "PersistenceKit")]
        ),
        // The object API against raw libpq on the same server (run with
        // `swift run -c release --package-path Stores/PostgreSQL PostgreSQLBenchmarks`).
        .executableTarget(
            name: "PostgreSQLBenchmarks",
            dependencies: ["CLibPQ", "PersistenceKitPostgreSQL", .product(name: "PersistenceKit", package: "PersistenceKit")]
        ),
        // The ItemsImport example against PostgreSQL.
        .executableTarget(
            name: "ItemsImportPostgreSQL",
            dependencies: ["PersistenceKitPostgreSQL", .product(name: "ModelActorKit", package: "PersistenceKit")]
        ),
        .testTarget(
            name: "PersistenceKitPostgreSQLTests",
            dependencies: [
                "PersistenceKitPostgreSQL", .product(name: "PersistenceKit", package: "PersistenceKit"),
                // The behaviour checks the root package's stores pass too.
                .product(name: "PersistenceKitStoreBehaviour", package: "PersistenceKit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
