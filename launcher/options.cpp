#include "launcher/options.hpp"

#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <cerrno>

#include "nestbox_config.hpp"
#include "src/core/files.hpp"

namespace nestbox::launcher {

using policy::Mount;
using policy::MountType;

namespace {

Error option_error(const std::string& what) {
    return Error("options", what);
}

// The options, defined once with CLI11: names, arity, types, validation and help text. Their
// callbacks fill `policy_`, in command-line order, which is what makes the filesystem options
// apply in the order given.
class CommandLine {
  public:
    CommandLine() : app_("Run COMMAND in a fresh sandbox (nestbox(1)).", "nestbox") {
        app_.set_help_flag();  // handled by the tokenizer, so it works anywhere before COMMAND
        define_filesystem();
        define_namespaces();
        define_limits();
        define_security();
        define_environment();
        define_io();
    }

    Result<ParsedCommandLine> parse(int argc, const char* const* argv);

  private:
    void define_filesystem();
    void define_namespaces();
    void define_limits();
    void define_security();
    void define_environment();
    void define_io();

    void add_mount(MountType type, std::string source, std::string dest, bool optional = false) {
        Mount m;
        m.type = type;
        m.source = std::move(source);
        m.dest = std::move(dest);
        m.optional = optional;
        if (type == MountType::Tmpfs) m.size = std::exchange(next_size_, std::nullopt);
        policy_.mounts.push_back(std::move(m));
    }
    CLI::Option* two_paths(const std::string& name, MountType type, bool optional,
                           const std::string& help) {
        return app_
            .add_option_function<std::vector<std::string>>(
                name,
                [this, type, optional](const std::vector<std::string>& v) {
                    add_mount(type, v[0], v[1], optional);
                },
                help)
            ->expected(2)
            ->type_name("SRC DEST");
    }
    CLI::Option* one_path(const std::string& name, MountType type, const std::string& help) {
        return app_.add_option_function<std::string>(
            name, [this, type](const std::string& dest) { add_mount(type, {}, dest); }, help);
    }
    // Sizes and durations are parsed by the policy layer so the JSON policy and the command line
    // accept exactly the same spellings.
    CLI::Option* size_option(const std::string& name, std::optional<std::uint64_t>& out,
                             const std::string& help) {
        return app_
            .add_option_function<std::string>(
                name,
                [&out, name](const std::string& text) {
                    auto size = policy::parse_size(text);
                    if (!size) throw CLI::ValidationError(name, size.error().what());
                    out = *size;
                },
                help)
            ->type_name("SIZE");
    }

    CLI::App app_;
    policy::Policy policy_;
    std::optional<std::uint64_t> next_size_;
    std::optional<std::string> policy_file_;
    std::optional<int> status_fd_;
};

void CommandLine::define_filesystem() {
    two_paths("--bind", MountType::Bind, false, "Bind host SRC read-write at DEST");
    two_paths("--bind-try", MountType::Bind, true, "Like --bind, skipped if SRC is missing");
    two_paths("--ro-bind", MountType::RoBind, false, "Bind host SRC read-only at DEST");
    two_paths("--ro-bind-try", MountType::RoBind, true,
              "Like --ro-bind, skipped if SRC is missing");
    one_path("--tmpfs", MountType::Tmpfs, "Mount a tmpfs at DEST, writable by the sandbox user")
        ->type_name("DEST");
    size_option("--size", next_size_, "Size of the next --tmpfs (default 256M)");
    one_path("--dir", MountType::Dir, "Create a directory at DEST")->type_name("DEST");
    app_.add_option_function<std::vector<std::string>>(
            "--symlink",
            [this](const std::vector<std::string>& v) {
                add_mount(MountType::Symlink, v[0], v[1]);
            },
            "Create a symlink at DEST pointing to TARGET")
        ->expected(2)
        ->type_name("TARGET DEST");
    one_path("--proc", MountType::Proc, "Mount a new procfs at DEST")->type_name("DEST");
    one_path("--dev", MountType::Dev, "Mount a minimal /dev at DEST")->type_name("DEST");
    app_.add_option_function<std::string>(
            "--chdir", [this](const std::string& d) { policy_.chdir = d; },
            "Working directory of COMMAND")
        ->type_name("DIR");
    app_.add_option_function<std::string>(
            "--workspace", [this](const std::string& d) { policy_.workspace = d; },
            "Bind host DIR read-write at /workspace and start there")
        ->type_name("DIR");
    app_.add_flag_callback(
        "--no-default-root", [this] { policy_.default_root = false; },
        "Start from an empty root instead of the default system binds");
}

void CommandLine::define_namespaces() {
    app_.add_flag_callback(
        "--share-net", [this] { policy_.share_net = true; },
        "Keep the host network (default: a new namespace with loopback only)");
    app_.add_option_function<std::string>(
            "--hostname", [this](const std::string& h) { policy_.hostname = h; },
            "Host name inside the sandbox (default: nestbox)")
        ->type_name("NAME");
    app_.add_option_function<std::uint32_t>(
            "--uid", [this](std::uint32_t v) { policy_.uid = v; }, "UID of COMMAND (default 65534)")
        ->type_name("UID");
    app_.add_option_function<std::uint32_t>(
            "--gid", [this](std::uint32_t v) { policy_.gid = v; }, "GID of COMMAND (default 65534)")
        ->type_name("GID");
    // bubblewrap spellings of what nestbox always does, accepted so bwrap command lines work.
    for (const char* always : {"--unshare-all", "--die-with-parent", "--new-session"}) {
        app_.add_flag(always)->description("Always on; accepted for bubblewrap compatibility");
    }
}

void CommandLine::define_limits() {
    size_option("--memory", policy_.limits.memory_bytes, "Memory limit, e.g. 512M");
    app_.add_option_function<std::uint32_t>(
            "--cpu", [this](std::uint32_t v) { policy_.limits.cpu_percent = v; },
            "CPU limit in percent of one core (100 = one core)")
        ->type_name("PERCENT");
    app_.add_option_function<std::uint32_t>(
            "--pids", [this](std::uint32_t v) { policy_.limits.pids = v; },
            "Maximum number of processes, the sandbox's init included")
        ->type_name("N");
    app_.add_option_function<std::string>(
            "--timeout",
            [this](const std::string& text) {
                auto t = policy::parse_seconds(text);
                if (!t) throw CLI::ValidationError("--timeout", t.error().what());
                policy_.limits.timeout = *t;
            },
            "Kill the whole sandbox after SECONDS")
        ->type_name("SECONDS");
    app_.add_option_function<std::string>(
            "--cgroup-parent", [this](const std::string& p) { policy_.limits.cgroup_parent = p; },
            "cgroup under which the sandbox's cgroup is created")
        ->type_name("PATH");
    app_.add_option_function<std::string>(
            "--limits",
            [this](const std::string& mode) {
                policy_.limits.mode =
                    mode == "strict" ? policy::LimitMode::Strict : policy::LimitMode::BestEffort;
            },
            "strict (default): a limit the host cannot enforce is an error; best-effort: a warning")
        ->check(CLI::IsMember({"strict", "best-effort"}))
        ->type_name("MODE");
}

void CommandLine::define_security() {
    app_.add_option_function<std::string>(
            "--seccomp", [this](const std::string& s) { policy_.seccomp = s; },
            "default, none, or a profile FILE (nestbox-policy(5))")
        ->type_name("PROFILE");
    app_.add_flag_callback(
        "--landlock", [this] { policy_.landlock = true; },
        "Also confine writes with Landlock to the writable mounts");
}

void CommandLine::define_environment() {
    app_.add_option_function<std::vector<std::string>>(
            "--setenv",
            [this](const std::vector<std::string>& v) {
                // Through merge(), so a later --setenv undoes an earlier --unsetenv and vice versa.
                policy::Policy op;
                op.setenv = {{v[0], v[1]}};
                policy_.merge(op);
            },
            "Set VAR to VALUE")
        ->expected(2)
        ->type_name("VAR VALUE");
    app_.add_option_function<std::string>(
            "--unsetenv",
            [this](const std::string& v) {
                policy::Policy op;
                op.unsetenv = {v};
                policy_.merge(op);
            },
            "Unset VAR")
        ->type_name("VAR");
    app_.add_flag_callback(
        "--inherit-env", [this] { policy_.inherit_env = true; },
        "Start from the caller's environment instead of a clean one");
}

void CommandLine::define_io() {
    app_.add_option_function<int>(
            "--status-fd",
            [this](int fd) {
                if (fd < 0)
                    throw CLI::ValidationError("--status-fd",
                                               "must be a file descriptor (0 or more)");
                status_fd_ = fd;
            },
            "Write JSON events (started, exited) to FD")
        ->type_name("FD");
    app_.add_option_function<std::string>(
            "--policy", [this](const std::string& f) { policy_file_ = f; },
            "Read settings from a JSON policy FILE; options override it")
        ->type_name("FILE");
    app_.add_flag("--version")->description("Print the version and exit");
    app_.add_flag("-h,--help")->description("Print this help and exit");
}

// The tokenizer. CLI11 2.1's own parser eats a `--` that follows a multi-value option and then
// reads the command's words as options, and refuses values that start with '-' as the second
// argument of two-argument options (`--setenv JAVA_OPTS -Xmx1g`); both break bubblewrap's
// contract. So the words are grouped here, using the arity CLI11 knows for each option, and each
// group is handed to that option, which converts, validates and runs its callback.
Result<ParsedCommandLine> CommandLine::parse(int argc, const char* const* argv) {
    int i = 1;
    bool separator = false;
    while (i < argc) {
        const std::string word = argv[i];
        if (word == "--") {
            separator = true;
            ++i;
            break;
        }
        if (word.empty() || word.front() != '-') break;  // COMMAND starts here
        if (word == "-h" || word == "--help") return ParsedCommandLine{app_.help(), {}};
        if (word == "--version")
            return ParsedCommandLine{std::string("nestbox ") + NESTBOX_VERSION + "\n", {}};

        const auto eq = word.find('=');
        const std::string name = word.substr(0, eq);
        CLI::Option* op = app_.get_option_no_throw(name);
        if (op == nullptr || !name.starts_with("--")) {
            return option_error("unknown option '" + word + "'");
        }
        const int arity = op->get_items_expected_max();
        std::vector<std::string> values;
        if (eq != std::string::npos) {
            if (arity != 1)
                return option_error(name + ": takes " + std::to_string(arity) +
                                    " values, not NAME=VALUE");
            values.push_back(word.substr(eq + 1));
        } else {
            if (i + arity >= argc) {
                return option_error(name + ": needs " + std::to_string(arity) +
                                    (arity == 1 ? " value" : " values"));
            }
            for (int k = 1; k <= arity; ++k)
                values.emplace_back(argv[i + k]);
            i += arity;
        }
        ++i;
        try {
            op->add_result(arity == 0 ? std::vector<std::string>{"true"} : values);
            op->run_callback();
            op->clear();
        } catch (const CLI::Error& e) {
            std::string why = e.what();
            if (!why.starts_with(name)) why.insert(0, name + ": ");
            return option_error(why);
        }
    }

    ParsedCommandLine parsed;
    Invocation& inv = parsed.invocation;
    for (; i < argc; ++i)
        inv.command.emplace_back(argv[i]);
    if (!inv.command.empty() && inv.command.front().starts_with("-")) {
        // Without `--` the word would have been read as an option; after it, a command named
        // like an option is almost certainly a mistake in the caller's argument building.
        return option_error("command '" + inv.command.front() + "' looks like an option" +
                            (separator ? "" : " (unknown option)"));
    }

    if (policy_file_) {
        auto text = read_file(AT_FDCWD, *policy_file_);
        if (!text) return Error("policy", *policy_file_, text.error().code());
        auto from_file = policy::parse_policy_json(*text);
        if (!from_file) {
            return Error("policy", *policy_file_ + ": " + from_file.error().what());
        }
        from_file->merge(policy_);
        inv.policy = std::move(*from_file);
    } else {
        inv.policy = std::move(policy_);
    }
    inv.status_fd = status_fd_;
    return parsed;
}

}  // namespace

Result<ParsedCommandLine> parse_command_line(int argc, const char* const* argv) {
    return CommandLine().parse(argc, argv);
}

}  // namespace nestbox::launcher
