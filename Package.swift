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
        .executable(name: "table-model-bench", targets: ["TableModelBenchmark"]),
    ],
    dependencies: [],
    targets: [
        // Layer 2: the table and its editing semantics as pure values.
        // libm: Double.rounded() needs it on Linux, where only Foundation would pull it in otherwise.
        .target(
            name: "TableModel", swiftSettings: swiftSettings,
            linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        .testTarget(name: "TableModelTests", dependencies: ["TableModel"], swiftSettings: swiftSettings),
        // Prints the model's timings (swift run -c release table-model-bench); a figure, not a pass/fail test.
        .executableTarget(name: "TableModelBenchmark", dependencies: ["TableModel"], swiftSettings: swiftSettings),
    ]
)
