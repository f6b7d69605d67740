//! Compiles in the git revision the binary is built from (`-dirty` when
//! tracked files had changes), so a row says which code produced it even
//! where the binary runs away from the repository it was built in (the GPU
//! machine gets a copy whose history may be older).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    for path in [
        "../.git/HEAD",
        "../.git/refs/heads",
        "../.git/packed-refs",
        "../harness/src",
        "../engine/src",
        "../kernels/src",
        "../datasets/src",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
    let rev = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let value = if rev.is_empty() || !dirty {
        rev
    } else {
        format!("{rev}-dirty")
    };
    println!("cargo:rustc-env=SPECULA_BUILD_REV={value}");
}
