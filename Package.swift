// swift-tools-version: 6.1
import PackageDescription

/// Settings every target shares: Swift 6 language mode (strict concurrency) plus explicit `any`.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Tablecast",
    products: [
        .library(name: "TableModel", targets: ["TableModel"]),
        .library(name: "TableStore", targets: ["TableStore"]),
        .executable(name: "store-bench", targets: ["TableStoreBenchmark"]),
    ],
    dependencies: [],
    targets: [
        // Layer 2: the table and its editing semantics as pure values.
        .target(name: "TableModel", swiftSettings: swiftSettings),
        .testTarget(name: "TableModelTests", dependencies: ["TableModel"], swiftSettings: swiftSettings),

        // Layer 1: persistence. The SQLite C API as a system library, and the store of tables, log, snapshots and refs.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .target(name: "TableStore", dependencies: ["CSQLite"], swiftSettings: swiftSettings),
        .testTarget(name: "TableStoreTests", dependencies: ["TableStore", "CSQLite"], swiftSettings: swiftSettings),
        .executableTarget(name: "TableStoreBenchmark", dependencies: ["TableStore"], swiftSettings: swiftSettings),
    ]
)
