import Foundation
import TableModel
import TablecastClient
import XCTest

/// Runs the built `tablecast` binary (next to the test bundle) against an in-process server.
final class CommandLineTests: XCTestCase {
    struct Outcome: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var binary: URL {
        let directory =
            Bundle.main.bundleURL.hasDirectoryPath
            ? Bundle.main.bundleURL : Bundle.main.bundleURL.deletingLastPathComponent()
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

    /// Runs `tablecast arguments…` on another thread.
    static func runInBackground(_ arguments: [String]) -> Task<Outcome, any Error> {
        Task.detached { try run(arguments) }
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

    /// Optimistic writers: their own screen shows each intent before any answer (intent → own screen is far
    /// below intent → delivery to the others), and everyone converges.
    func testLoadWithOptimisticWritersMeasuresTheOwnScreen() async throws {
        let server = try await TestServer()
        let outcome = try Self.run([
            "load", "--url", server.url, "--create", "--table", "opt", "--subscribers", "3", "--writers", "2",
            "--writers-subscribe", "--optimistic", "--count", "200", "--json", "--quiet",
        ])
        XCTAssertEqual(outcome.status, 0, outcome.stderr + outcome.stdout)
        let report = try JSONValue(parsing: outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        guard case .object(let members) = report, case .object(let convergence)? = members["convergence"],
            case .object(let latency)? = members["latencyMs"], case .object(let own)? = latency["intentToOwnScreen"],
            case .object(let delivery)? = latency["intentToDelivery"], case .number(let ownP50)? = own["p50"],
            case .number(let deliveryP50)? = delivery["p50"]
        else { return XCTFail("report shape: \(outcome.stdout)") }
        XCTAssertEqual(convergence["ok"], .bool(true))
        XCTAssertLessThan(ownP50, deliveryP50, "the writer's screen answers before the server's update reaches others")

        let refused = try Self.run(["load", "--url", server.url, "--optimistic", "--count", "1"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("--optimistic needs --writers-subscribe"), refused.stderr)
        await server.tearDown()
    }

    /// Raw writers: bare connections, edits matched to their acks by ref; subscribers' replicas still converge.
    func testLoadWithRawWritersCommitsEveryEditAndConverges() async throws {
        let server = try await TestServer()
        let outcome = try Self.run([
            "load", "--url", server.url, "--create", "--table", "raw", "--subscribers", "2", "--writers", "3",
            "--in-flight", "4", "--raw-writers", "--mix", "edit=1", "--count", "300", "--json", "--quiet",
        ])
        XCTAssertEqual(outcome.status, 0, outcome.stderr + outcome.stdout)
        let report = try JSONValue(parsing: outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        guard case .object(let members) = report, case .object(let convergence)? = members["convergence"],
            case .object(let intents)? = members["intents"], case .object(let deliveries)? = members["deliveries"]
        else { return XCTFail("report shape: \(outcome.stdout)") }
        XCTAssertEqual(convergence["ok"], .bool(true))
        XCTAssertEqual(intents["sent"], .number(300))
        XCTAssertEqual(intents["acked"], .number(300))
        XCTAssertEqual(deliveries["count"], .number(600), "each edit reached both subscribers")

        let refused = try Self.run(["load", "--url", server.url, "--raw-writers", "--mix", "insert=1", "--count", "1"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("--raw-writers sends edits only"), refused.stderr)
        await server.tearDown()
    }

    func testScriptedCommandsPrintAcksAndErrors() async throws {
        let server = try await TestServer()
        let url = ["--url", server.url]
        var outcome = try Self.run(
            ["tables", "create", "groceries", "--sections", #"[{"header":"Fruit","rows":[{"value":"fig"}]}]"#] + url)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        XCTAssertTrue(outcome.stdout.contains(#""epoch""#), outcome.stdout)
        outcome = try Self.run(["insert", "--table", "groceries", "--at", "0,1", "milk"] + url)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        XCTAssertTrue(outcome.stdout.contains(#""resolved":[[0,1]]"#), outcome.stdout)
        outcome = try Self.run(
            ["insert", "--table", "groceries", "--at", "[0,0]", #"{"n":2}"#, "--client", "c1", "--ref", "once"] + url)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        // The same client and ref again: the original ack, not a second row.
        let again = try Self.run(
            ["insert", "--table", "groceries", "--at", "[0,0]", #"{"n":2}"#, "--client", "c1", "--ref", "once"] + url)
        XCTAssertEqual(again.stdout, outcome.stdout)
        outcome = try Self.run(["move", "--table", "groceries", "--from", "0,0", "--to", "0,2"] + url)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        outcome = try Self.run(["edit", "--table", "groceries", "--at", "0,0", "figs"] + url)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        outcome = try Self.run(
            ["batch", "--table", "groceries", "-"] + url,
            input: #"{"deleteRows":[{"at":[0,1]}],"insertRows":[{"at":[0,0],"value":"bread"}]}"#)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        outcome = try Self.run(["delete", "--table", "groceries", "--at", "0,9"] + url)
        XCTAssertEqual(outcome.status, 1)
        XCTAssertTrue(outcome.stderr.contains(#""code":"out_of_range""#), outcome.stderr)
        outcome = try Self.run(["tables", "rules", "groceries", #"{"moves":"none"}"#] + url)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        outcome = try Self.run(["move", "--table", "groceries", "--from", "0,0", "--to", "0,1"] + url)
        XCTAssertEqual(outcome.status, 1)
        XCTAssertTrue(outcome.stderr.contains("not_movable"), outcome.stderr)

        let truth = try await server.snapshot("groceries")
        XCTAssertEqual(truth.table.sections[0].rows.map(\.value), ["bread", "figs", ["n": 2]])

        // export → import under another name gives the same contents.
        let exported = try Self.run(["export", "groceries"] + url)
        XCTAssertEqual(exported.status, 0, exported.stderr)
        outcome = try Self.run(["import", "-", "--as", "copy"] + url, input: exported.stdout)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let copy = try await server.snapshot("copy")
        XCTAssertEqual(
            copy.table.sections.map { $0.rows.map(\.value) }, truth.table.sections.map { $0.rows.map(\.value) })
        XCTAssertEqual(copy.table.rules.moves, .none)
        outcome = try Self.run(["import", "-"] + url, input: exported.stdout)
        XCTAssertEqual(outcome.status, 1)
        XCTAssertTrue(outcome.stderr.contains("table_exists"), outcome.stderr)

        outcome = try Self.run(["tables", "list"] + url)
        XCTAssertEqual(outcome.stdout.split(separator: "\n").count, 2, outcome.stdout)
        outcome = try Self.run(["tables", "drop", "copy"] + url)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        await server.tearDown()
    }

    func testWatchPrintsTheSnapshotAndUpdatesAndFailsWhenRefused() async throws {
        let server = try await TestServer()
        let url = ["--url", server.url]
        let refused = try Self.run(["watch", "nope"] + url)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("no_such_table"), refused.stderr)

        let writer = try TablecastClient(configuration: .init(url: server.url))
        writer.connect()
        try await writer.createTable("w", sections: [SectionContent(rows: [RowContent(value: "a")])])
        try await writer.subscribe("w")
        // watch runs until it has seen 3 updates; the writer makes them while it waits.
        let arguments = ["watch", "w", "--updates", "3"] + url
        let watching = Self.runInBackground(arguments)
        try await eventually("watch subscribed") {
            try await writer.listTables().contains { $0.table == "w" && $0.subscribers >= 2 }
        }
        try await writer.insert("w", at: RowPath(section: 0, row: 1), value: "b")
        try await writer.edit("w", at: RowPath(section: 0, row: 0), value: "A")
        try await writer.delete("w", at: RowPath(section: 0, row: 1))
        let outcome = try await watching.value
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let lines = outcome.stdout.split(separator: "\n").map { try? JSONValue(parsing: String($0)) }
        XCTAssertEqual(lines.count, 4, outcome.stdout)
        guard case .object(let snapshot)? = lines[0], case .object(let last)? = lines[3] else {
            return XCTFail(outcome.stdout)
        }
        XCTAssertEqual(snapshot["type"], "snapshot")
        XCTAssertEqual(last["type"], "update")
        XCTAssertEqual(last["version"], 3)
        await writer.close()
        await server.tearDown()
    }
}
