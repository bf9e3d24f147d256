//! `strict-mcp skills list|get|load`: the Skills extension through the client library, whose
//! checks (declaration first, no prefetch, size/digest/frontmatter verification) apply as
//! they do for any host. `--json` prints the answers byte-exact like every other subcommand.

use serde_json::Value;

use super::Session;
use crate::cli::args::SkillsCommand;
use crate::cli::exit::Exit;
use crate::cli::output;
use crate::wire::skills::{SkillEntry, SkillResources};

fn files(entry: &SkillEntry) -> String {
    match &entry.resources {
        SkillResources::Files(files) => files.len().to_string(),
        SkillResources::Dynamic => "dynamic".to_owned(),
    }
}

impl Session {
    pub(super) async fn skills(&mut self, command: SkillsCommand) -> Exit {
        self.flush();
        match command {
            SkillsCommand::List => self.skills_list().await,
            SkillsCommand::Get { uri } => self.skills_get(&uri).await,
            SkillsCommand::Load { uri, file } => self.skills_load(&uri, file.as_deref()).await,
        }
    }

    async fn skills_list(&mut self) -> Exit {
        let listed = if self.single_page {
            self.client
                .list_skills_page(None, &self.options)
                .await
                .map(|page| (page.skills, page.next_cursor))
        } else {
            self.client
                .list_skills(&self.options)
                .await
                .map(|skills| (skills, None))
        };
        let (skills, more) = match listed {
            Ok(x) => x,
            Err(e) => return self.fail(&e),
        };
        self.flush();
        if !self.json {
            let rows: Vec<Vec<String>> = skills
                .iter()
                .map(|s| {
                    vec![
                        s.name().unwrap_or_default().to_owned(),
                        s.uri.clone(),
                        files(s),
                        output::short(s.description().unwrap_or_default(), 60),
                    ]
                })
                .collect();
            out_raw!(
                "{}",
                output::table(
                    &["NAME", "URI", "FILES", "DESCRIPTION"],
                    &rows,
                    output::colour()
                )
            );
            if let Some(next) = more {
                out!("(more: nextCursor {})", Value::String(next));
            }
        }
        Exit::Success
    }

    async fn skills_get(&mut self, uri: &str) -> Exit {
        match self.client.get_skill(uri, &self.options).await {
            Ok(entry) => {
                self.flush();
                if !self.json {
                    let text = serde_json::to_string(&entry).unwrap_or_default();
                    out!("{}", output::pretty(&text));
                }
                Exit::Success
            }
            Err(e) => self.fail(&e),
        }
    }

    async fn skills_load(&mut self, uri: &str, file: Option<&str>) -> Exit {
        let entry = match self.client.get_skill(uri, &self.options).await {
            Ok(entry) => entry,
            Err(e) => return self.fail(&e),
        };
        let loaded = match self.client.load_skill(&entry, &self.options).await {
            Ok(loaded) => loaded,
            Err(e) => return self.fail(&e),
        };
        let Some(file) = file else {
            self.flush();
            if !self.json {
                out_raw!("{}", loaded.manifest);
            }
            return Exit::Success;
        };
        // A URI goes to the library as given (it refuses one the entry does not list); a
        // relative path is resolved against the skill's directory.
        let target = if file.contains("://") {
            file.to_owned()
        } else {
            match loaded.resolve(file) {
                Some(uri) => uri,
                None => {
                    self.flush();
                    eprintln!("error: {file:?} is not a relative path inside the skill");
                    return Exit::Usage;
                }
            }
        };
        match self
            .client
            .read_skill_file(&loaded, &target, &self.options)
            .await
        {
            Ok(bytes) => {
                self.flush();
                if !self.json {
                    match String::from_utf8(bytes) {
                        Ok(text) => out_raw!("{text}"),
                        Err(e) => out!("({} bytes of binary content)", e.as_bytes().len()),
                    }
                }
                Exit::Success
            }
            Err(e) => self.fail(&e),
        }
    }
}
