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
            "Write a report to look at (repeatable): FILE.html, one self-contained page (no network needed) with "
                + "charts of throughput, latency percentiles and connections over time, the thresholds and their "
                + "verdicts, the settings and the server's version; FILE.png, its verdict, thresholds and charts as "
                + "one picture.",
            valueName: "file.html|file.png"))
    var reportFiles: [String] = []

    private enum ReportKind { case html, png }

    private static func kind(of path: String) -> ReportKind? {
        let name = path.lowercased()
        return name.hasSuffix(".html") ? .html : name.hasSuffix(".png") ? .png : nil
    }

    func validate() throws {
        for path in reportFiles where Self.kind(of: path) == nil {
            throw ValidationError("--report '\(path)': give a file name ending in .html or .png")
        }
        // Checked before the run, which may be long: a path that cannot be written would lose its results.
        for (option, path) in [("--out", seriesFile)] + reportFiles.map({ ("--report", $0) }) {
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
        var files: [(String, Data)] = []
        if let seriesFile { files.append((seriesFile, Data(report.series.csv.utf8))) }
        if !reportFiles.isEmpty {
            let page = LoadHTMLReport(
                report: report.json(with: verdicts), series: report.series, verdicts: verdicts,
                command: ["tablecast"] + CommandLine.arguments.dropFirst(), generated: Date())
            for path in reportFiles {
                files.append((path, Self.kind(of: path) == .png ? LoadPNGReport(page: page).png : Data(page.html.utf8)))
            }
        }
        for (path, contents) in files {
            do {
                try contents.write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                Output.error("tablecast load: cannot write \(path): \(error.localizedDescription)")
                throw ExitCode(1)
            }
        }
    }
}
