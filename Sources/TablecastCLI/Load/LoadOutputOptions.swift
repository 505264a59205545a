import ArgumentParser
import Foundation
import TableModel

/// The files `tablecast load` writes besides its report on stdout: the series as CSV (`--out`) and a report to look
/// at (`--report`).
struct LoadOutputOptions: ParsableArguments {
    @Option(
        name: .customLong("out"),
        help: ArgumentHelp(
            "Write the run second by second to this CSV file: a header, then a row per second with "
                + LoadSeries.columns.joined(separator: ", ") + " (the README, \"Load testing your deployment\", "
                + "says what each is). The JSON report has the same rows as `series`.",
            valueName: "file.csv"))
    var seriesFile: String?

    @Option(
        name: .customLong("report"),
        help: ArgumentHelp(
            "Write a report to look at: one self-contained HTML file (no network needed) with charts of throughput, "
                + "latency percentiles and connections over time, the thresholds and their verdicts, the settings "
                + "and the server's version.",
            valueName: "file.html"))
    var reportFile: String?

    func validate() throws {
        if let reportFile, !reportFile.lowercased().hasSuffix(".html") {
            throw ValidationError("--report '\(reportFile)': the report is HTML: give a file name ending in .html")
        }
        // Checked before the run, which may be long: a path that cannot be written would lose its results.
        for (option, path) in [("--out", seriesFile), ("--report", reportFile)] {
            guard let path else { continue }
            let parent = (path as NSString).deletingLastPathComponent
            let folder = parent.isEmpty ? "." : parent
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue,
                FileManager.default.isWritableFile(atPath: folder)
            else {
                throw ValidationError("\(option) '\(path)': no folder '\(folder)' that this user can write to")
            }
        }
    }

    /// Writes the files asked for; a file that cannot be written is said on stderr and exits 1 (the report on
    /// stdout was printed first).
    func write(_ report: LoadReport, verdicts: [LoadReport.Verdict]) throws {
        var files: [(String, String)] = []
        if let seriesFile { files.append((seriesFile, report.series.csv)) }
        if let reportFile {
            let page = LoadHTMLReport(
                report: report.json(with: verdicts), series: report.series, verdicts: verdicts,
                command: ["tablecast"] + CommandLine.arguments.dropFirst(), generated: Date())
            files.append((reportFile, page.html))
        }
        for (path, contents) in files {
            do {
                try Data(contents.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                Output.error("tablecast load: cannot write \(path): \(error.localizedDescription)")
                throw ExitCode(1)
            }
        }
    }
}
