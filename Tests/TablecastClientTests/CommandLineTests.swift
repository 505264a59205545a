import Foundation
import TableModel
import TablecastClient
import XCTest

/// Runs the built `tablecast` binary (next to the test bundle) against an in-process server.
final class CommandLineTests: XCTestCase {
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var binary: URL {
        let directory = Bundle.main.bundleURL.hasDirectoryPath ? Bundle.main.bundleURL : Bundle.main.bundleURL.deletingLastPathComponent()
        return directory.appendingPathComponent("tablecast")
    }

    /// Runs `tablecast arguments…` to completion (with `input` on stdin).
    static func run(_ arguments: [String], input: String? = nil) throws -> Outcome {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try stdin.fileHandleForWriting.close()
        // Read both pipes before waiting so that a full pipe cannot block the child.
        let group = DispatchGroup()
        nonisolated(unsafe) var stderrData = Data()
        group.enter()
        DispatchQueue.global().async {
            stderrData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
            stderr: String(decoding: stderrData, as: UTF8.self))
    }

    func testLoadRunConvergesAndReportsJSON() async throws {
        let server = try await TestServer()
        let outcome = try Self.run([
            "load", "--url", server.url, "--create", "--tables", "2", "--subscribers", "6", "--writers", "3",
            "--count", "400", "--stale", "--json", "--quiet",
        ])
        XCTAssertEqual(outcome.status, 0, outcome.stderr + outcome.stdout)
        let report = try JSONValue(parsing: outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        guard case .object(let members) = report, case .object(let convergence)? = members["convergence"],
            case .object(let intents)? = members["intents"], case .object(let latency)? = members["latencyMs"]
        else { return XCTFail("report shape: \(outcome.stdout)") }
        XCTAssertEqual(convergence["ok"], .bool(true))
        XCTAssertEqual(intents["sent"], .number(400))
        guard case .number(let acked)? = intents["acked"] else { return XCTFail("acked") }
        XCTAssertGreaterThan(acked, 300)
        guard case .object(let delivery)? = latency["intentToDelivery"] else { return XCTFail("latency") }
        XCTAssertNotNil(delivery["p99.9"])
        XCTAssertNotNil(delivery["max"])
        await server.tearDown()
    }
}
