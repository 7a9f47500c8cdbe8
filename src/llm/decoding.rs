//! The text side of generation that every in-process backend shares: the
//! prompt rendered with the model's chat template and tokenized, one
//! sampler per completion, stop tokens and strings, the repetition cut, and
//! the completions decoded back to text. A backend supplies only the
//! forward pass, so every backend samples exactly the same way.

use super::chat::ChatTemplate;
use super::constraint::{TextChecker, MAX_REDRAWS};
use super::sampler::Sampler;
use super::{Completion, FinishReason, Prompt, Sampling};
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::OnceLock;
use tokenizers::Tokenizer;

/// Tokens that end a chat turn in the model families we run, whatever
/// end-of-sequence token a file names.
const TURN_END_MARKERS: [&str; 4] = [
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
];

pub struct TextCodec {
    name: String,
    tokenizer: Tokenizer,
    template: Option<ChatTemplate>,
    /// Tokens that end a turn.
    stop_tokens: Vec<u32>,
    context_length: usize,
    /// Each token's text alone, made when a constraint first needs it.
    pieces: OnceLock<Vec<String>>,
}

impl TextCodec {
    /// `stop_tokens` are the ids the model's files name as ending a
    /// sequence; the usual turn-end markers are added.
    pub fn new(
        name: String,
        tokenizer: Tokenizer,
        template: Option<ChatTemplate>,
        mut stop_tokens: Vec<u32>,
        context_length: usize,
    ) -> Self {
        stop_tokens.extend(
            TURN_END_MARKERS
                .iter()
                .filter_map(|m| tokenizer.token_to_id(m)),
        );
        stop_tokens.sort_unstable();
        stop_tokens.dedup();
        TextCodec {
            name,
            tokenizer,
            template,
            stop_tokens,
            context_length,
            pieces: OnceLock::new(),
        }
    }

    /// The text of one token on its own (empty for an unknown id).
    fn piece(&self, token: u32) -> &str {
        let pieces = self.pieces.get_or_init(|| {
            (0..self.tokenizer.get_vocab_size(true) as u32)
                .map(|id| self.tokenizer.decode(&[id], false).unwrap_or_default())
                .collect()
        });
        pieces.get(token as usize).map_or("", String::as_str)
    }

    /// The next token of a row: drawn by its sampler, then, while its
    /// constraint refuses the token, drawn again with that token masked;
    /// when that keeps failing, drawn among the likeliest tokens the
    /// constraint allows.
    fn draw(&self, state: &mut RowState, logits: &[f32]) -> u32 {
        let token = state.sampler.next_token(logits);
        let Some(checker) = &state.checker else {
            return token;
        };
        // Whether `token` may follow, its whole letters judged by `rule`.
        let allowed_by = |token: u32, rule: &dyn Fn(&str) -> bool| {
            if self.stop_tokens.contains(&token) {
                checker.allows_end()
            } else {
                let (text, open) = self.new_text(&state.unfinished, token);
                if text.is_empty() {
                    !open || checker.allows_unfinished_letter()
                } else {
                    !text.contains(char::REPLACEMENT_CHARACTER) && rule(&text)
                }
            }
        };
        let allowed = |token: u32| allowed_by(token, &|text| checker.allows(text));
        if allowed(token) {
            state.rule_stuck = false;
            return token;
        }
        // The text already holds what the rule cannot accept (a word no
        // name begins with) and nothing likely mends it: the rule stands
        // aside until a drawn token is one it allows again.
        if state.rule_stuck {
            return token;
        }
        let first = token;
        let mut masked = logits.to_vec();
        let mut token = token;
        for _ in 0..MAX_REDRAWS {
            if let Some(logit) = masked.get_mut(token as usize) {
                *logit = f32::NEG_INFINITY;
            }
            token = state.sampler.next_token(&masked);
            if allowed(token) {
                return token;
            }
        }
        // None of the model's likeliest tokens is allowed: where the rule's
        // last resort takes its first choice, that is better than a token
        // far down the distribution.
        if allowed_by(first, &|text| checker.allows_as_last_resort(text)) {
            return first;
        }
        // The sampler keeps reaching for refused tokens (an invented name
        // whose real spellings lie far down the distribution): draw among
        // the likeliest tokens the rule allows.
        if let Some(logit) = masked.get_mut(token as usize) {
            *logit = f32::NEG_INFINITY;
        }
        let mut kept = likeliest_allowed(&masked, |_| true, ALLOWED_SCAN, allowed);
        if kept.is_empty() {
            // The model holds to a name the schema lacks (`T2.RuGuId`)
            // and the real ones lie below the likeliest: look further, at
            // the tokens the rule deems worth trying.
            let worth_trying = |t| checker.worth_trying(self.piece(t));
            kept = likeliest_allowed(&masked, worth_trying, usize::MAX, allowed);
        }
        if kept.is_empty() {
            // Standing aside, the rule lets the model write what it drew
            // first, not the last of the redraws it refused.
            state.rule_stuck = true;
            return first;
        }
        let mut only = vec![f32::NEG_INFINITY; masked.len()];
        for &t in &kept {
            only[t as usize] = masked[t as usize];
        }
        state.sampler.next_token(&only)
    }

    /// The whole characters `token` adds to a row's text after the
    /// `unfinished` tokens, and whether it leaves a character unfinished.
    /// Byte-level vocabularies split a letter outside ASCII (`é`, `糖`)
    /// over several tokens, each of which alone decodes to U+FFFD; the
    /// constraint must read the letter, not the stand-in, so such tokens'
    /// text is read from all of them together once the letter is whole.
    /// Bytes that make no letter (two first bytes in a row, a letter
    /// still open after four tokens) keep their stand-ins in the text,
    /// which the constraint refuses: left open, they would pass unjudged
    /// forever, and a row the rule had cornered wrote nothing else.
    fn new_text(&self, unfinished: &Unfinished, token: u32) -> (Cow<'_, str>, bool) {
        const STAND_IN: char = char::REPLACEMENT_CHARACTER;
        let piece = self.piece(token);
        if unfinished.tokens.is_empty() && !piece.contains(STAND_IN) {
            return (Cow::Borrowed(piece), false);
        }
        let ids: Vec<u32> = unfinished.tokens.iter().copied().chain([token]).collect();
        let text = self.tokenizer.decode(&ids, false).unwrap_or_default();
        let whole = text.trim_end_matches(STAND_IN);
        let stand_ins = (text.len() - whole.len()) / STAND_IN.len_utf8();
        // A letter is four bytes at most: one stand-in at the end, after
        // at most three tokens, is a letter still being written.
        let open = stand_ins == 1 && ids.len() < MAX_LETTER_BYTES;
        let read = if open || stand_ins == 0 { whole } else { &text };
        let new = read.get(unfinished.read..).unwrap_or_default();
        (Cow::Owned(new.to_string()), open)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// Caps the context at what a backend has room for.
    pub fn with_context_length(mut self, tokens: usize) -> Self {
        self.context_length = self.context_length.min(tokens);
        self
    }

    /// The exact text the model sees for a prompt.
    pub fn render(&self, prompt: &Prompt) -> Result<String> {
        match prompt {
            Prompt::Raw(text) => Ok(text.clone()),
            Prompt::Chat(messages) => self
                .template
                .as_ref()
                .ok_or_else(|| {
                    Error::Inference(format!(
                        "{} has no chat template; use a raw prompt",
                        self.name
                    ))
                })?
                .render(messages)
                .map_err(Error::Inference),
        }
    }

    /// The tokens the tokenizer writes for `text`; the estimate where it
    /// cannot encode it.
    pub fn count_tokens(&self, text: &str) -> usize {
        self.encode(text)
            .map(|ids| ids.len())
            .unwrap_or_else(|_| super::estimate_tokens(text))
    }

    /// The text of the first token the tokenizer writes for `text`, with
    /// the tokens after it that finish its last character (as a
    /// constraint reads tokens, [`Self::new_text`]).
    pub fn first_token_text(&self, text: &str) -> Option<String> {
        let ids = self.encode(text).ok()?;
        (1..=ids.len())
            .map(|k| self.tokenizer.decode(&ids[..k], false).unwrap_or_default())
            .find(|start| !start.ends_with(char::REPLACEMENT_CHARACTER))
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| Error::Inference(format!("tokenizer: {e}")))
    }

    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer
            .decode(ids, true)
            .map_err(|e| Error::Inference(format!("tokenizer: {e}")))
    }

    /// Prompt tokens, checked against the context length.
    pub fn prompt_ids(&self, prompt: &Prompt) -> Result<Vec<u32>> {
        let ids = self.encode(&self.render(prompt)?)?;
        if ids.is_empty() {
            return Err(Error::Inference("the prompt is empty".into()));
        }
        if ids.len() >= self.context_length {
            return Err(Error::PromptTooLong {
                tokens: ids.len(),
                context: self.context_length,
            });
        }
        Ok(ids)
    }

    /// The request's token limit, cut to what the context leaves.
    pub fn max_new_tokens(&self, prompt_len: usize, sampling: &Sampling) -> usize {
        sampling.max_tokens.min(self.context_length - prompt_len)
    }

    /// Draws a running row's next token from `logits` and records it (a
    /// finished row is left as it is): one decoding step of one row, for
    /// callers that run the forward passes themselves.
    pub fn sample_next(&self, state: &mut RowState, logits: &[f32]) -> Result<()> {
        if state.is_running() {
            let token = self.draw(state, logits);
            self.accept(state, token)?;
        }
        Ok(())
    }

    /// Draws each running row's next token from its logits (`logits[i]`
    /// for the i-th row), the rows in parallel: on a GPU with many rows the
    /// samplers' passes over the vocabulary would otherwise outlast the
    /// forward pass. Each row draws from its own generator, so the result
    /// does not depend on the order.
    pub fn sample_rows<'a>(
        &self,
        rows: impl Iterator<Item = &'a mut RowState>,
        logits: &[Vec<f32>],
    ) -> Result<()> {
        let rows: Vec<&mut RowState> = rows.collect();
        rows.into_par_iter()
            .zip(logits)
            .try_for_each(|(state, logits)| self.sample_next(state, logits))
    }

    /// Samples every row until each stops or reaches its token limit.
    /// `logits` holds each row's first distribution; `step` feeds the
    /// token each row sampled (`running[row]` false for finished rows, whose
    /// token is a placeholder) and returns the next logits of every running
    /// row (anything, an empty vector say, for the others).
    pub fn decode_rows(
        &self,
        rows: &mut [RowState],
        mut logits: Vec<Vec<f32>>,
        mut step: impl FnMut(&[u32], &[bool]) -> Result<Vec<Vec<f32>>>,
    ) -> Result<()> {
        loop {
            self.sample_rows(rows.iter_mut(), &logits)?;
            let next: Vec<u32> = rows.iter().map(RowState::last_token).collect();
            let running: Vec<bool> = rows.iter().map(RowState::is_running).collect();
            if !running.contains(&true) {
                return Ok(());
            }
            let out = step(&next, &running)?;
            for ((slot, row_logits), is_running) in logits.iter_mut().zip(out).zip(&running) {
                if *is_running {
                    *slot = row_logits;
                }
            }
        }
    }

    /// Samples the rows of one prompt together, each checking tokens
    /// guessed by lookup (`lookup::draft`, up to `max_draft` at a time) in
    /// its own prompt and answer so far, then in the other rows' answers and
    /// `recent` ones. One forward pass feeds every running row its last
    /// token and its guess; rows with shorter guesses are filled up to the
    /// longest with positions they discard. `first` is the prompt's
    /// next-token distribution. Every token is drawn as `decode_rows` draws
    /// it, one random draw per token, and a guess is kept only when it is
    /// the token drawn; so guesses change the text only as far as a pass
    /// over several positions computes slightly different logits than
    /// one-position passes do (quantized activations round differently).
    /// Afterwards `model` holds, for the rows still in it, the states of
    /// every token fed that is part of the answer, and none of a rejected
    /// guess.
    pub fn decode_drafted(
        &self,
        rows: &mut [RowState],
        prompt: &[u32],
        recent: &[Vec<u32>],
        first: &[f32],
        max_draft: usize,
        model: &mut dyn DraftTarget,
    ) -> Result<DraftCount> {
        let mut count = DraftCount::default();
        for state in rows.iter_mut() {
            let token = self.draw(state, first);
            self.accept(state, token)?;
        }
        // Model row i decodes `rows[in_model[i]]`.
        let mut in_model: Vec<usize> = (0..rows.len()).collect();
        let mut contexts = vec![prompt.to_vec(); rows.len()];
        loop {
            let live: Vec<usize> = (0..in_model.len())
                .filter(|&i| rows[in_model[i]].finished.is_none())
                .collect();
            if live.is_empty() {
                return Ok(count);
            }
            if live.len() < in_model.len() {
                model.keep_rows(&live)?;
                in_model = live.iter().map(|&i| in_model[i]).collect();
            }
            let mut guesses = Vec::with_capacity(in_model.len());
            for &row in &in_model {
                let context = &mut contexts[row];
                context.extend_from_slice(&rows[row].tokens[context.len() - prompt.len()..]);
                let sources: Vec<&[u32]> = (0..rows.len())
                    .filter(|&other| other != row)
                    .map(|other| rows[other].tokens())
                    .chain(recent.iter().map(Vec::as_slice))
                    .collect();
                let room = rows[row].max_tokens - rows[row].tokens.len();
                guesses.push(super::lookup::draft(context, &sources, max_draft.min(room)));
            }
            let width = 1 + guesses.iter().map(Vec::len).max().unwrap_or(0);
            let inputs: Vec<Vec<u32>> = in_model
                .iter()
                .zip(&guesses)
                .map(|(&row, guess)| {
                    let last = rows[row].last_token();
                    let mut input = vec![last];
                    input.extend_from_slice(guess);
                    // Filler, discarded below.
                    input.resize(width, last);
                    input
                })
                .collect();
            let logits = model.feed(&inputs)?;
            let mut discarded = Vec::with_capacity(in_model.len());
            for ((&row, guess), logits) in in_model.iter().zip(&guesses).zip(logits) {
                let kept = self.check_guess(&mut rows[row], guess, &logits)?;
                count.guessed += guess.len();
                count.kept += kept;
                discarded.push(width - 1 - kept);
            }
            model.discard(&discarded)?;
        }
    }

    /// Samples a row's tokens from the logits at its last token and each
    /// guessed token after it, while the guesses match the tokens drawn;
    /// returns how many guesses were kept.
    fn check_guess(
        &self,
        state: &mut RowState,
        guess: &[u32],
        logits: &[Vec<f32>],
    ) -> Result<usize> {
        for (i, &guessed) in guess.iter().enumerate() {
            let token = self.draw(state, &logits[i]);
            self.accept(state, token)?;
            if token != guessed {
                return Ok(i);
            }
            if state.finished.is_some() {
                return Ok(i + 1);
            }
        }
        if state.finished.is_none() {
            let token = self.draw(state, &logits[guess.len()]);
            self.accept(state, token)?;
        }
        Ok(guess.len())
    }

    /// Records a sampled token and decides whether its row is done.
    fn accept(&self, state: &mut RowState, token: u32) -> Result<()> {
        if !state.to_limit && self.stop_tokens.contains(&token) {
            state.finished = Some(FinishReason::Stop);
            return Ok(());
        }
        state.tokens.push(token);
        if let Some(checker) = &mut state.checker {
            let (text, open) = self.new_text(&state.unfinished, token);
            checker.push(&text);
            if open {
                state.unfinished.tokens.push(token);
                state.unfinished.read += text.len();
            } else {
                state.unfinished = Unfinished::default();
            }
        }
        if !state.stop.is_empty() {
            let text = self.decode(&state.tokens)?;
            if state.stop.iter().any(|s| text.contains(s.as_str())) {
                state.finished = Some(FinishReason::Stop);
                return Ok(());
            }
        }
        if state.tokens.len() >= state.max_tokens {
            state.finished = Some(FinishReason::Length);
        } else if !state.to_limit && super::repetition::ends_in_loop(&state.tokens) {
            state.finished = Some(FinishReason::Repetition);
        }
        Ok(())
    }

    /// Texts (cut at the first stop string) and the total generated tokens.
    pub fn completions(&self, rows: Vec<RowState>) -> Result<(Vec<Completion>, usize)> {
        let mut completions = Vec::with_capacity(rows.len());
        let mut generated = 0;
        for state in rows {
            let mut text = self.decode(&state.tokens)?;
            let mut finish = state.finished.unwrap_or(FinishReason::Length);
            if let Some(cut) = state
                .stop
                .iter()
                .filter_map(|s| text.find(s.as_str()))
                .min()
            {
                text.truncate(cut);
                finish = FinishReason::Stop;
            }
            generated += state.tokens.len();
            completions.push(Completion {
                text,
                finish_reason: finish,
                generated_tokens: state.tokens.len(),
            });
        }
        Ok((completions, generated))
    }
}

/// A model decoding rows with guessed tokens.
pub trait DraftTarget {
    /// Runs one input per row, all of one length, after the states each
    /// row holds; returns per row the next-token logits at each input
    /// position.
    fn feed(&mut self, inputs: &[Vec<u32>]) -> Result<Vec<Vec<Vec<f32>>>>;
    /// Drops the states of row r's last `positions[r]` tokens fed.
    fn discard(&mut self, positions: &[usize]) -> Result<()>;
    /// Keeps only the rows `rows`, which become rows 0, 1, ...
    fn keep_rows(&mut self, rows: &[usize]) -> Result<()>;
}

/// Guessed tokens checked by the model, and how many it kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DraftCount {
    pub guessed: usize,
    pub kept: usize,
}

/// Tokens looked at, in order of likelihood, for the ones a constraint
/// allows once its redraws have failed (each look re-reads the text).
const ALLOWED_SCAN: usize = 512;
/// Allowed tokens enough to sample among.
const ALLOWED_KEPT: usize = 16;

/// Up to [`ALLOWED_KEPT`] tokens that `allowed` accepts among the `scan`
/// likeliest of the tokens of `logits` (finite ones only) that `among`
/// picks, likeliest first; empty when it accepts none of them.
fn likeliest_allowed(
    logits: &[f32],
    among: impl Fn(u32) -> bool,
    scan: usize,
    allowed: impl Fn(u32) -> bool,
) -> Vec<u32> {
    let by_likelihood = |a: &u32, b: &u32| logits[*b as usize].total_cmp(&logits[*a as usize]);
    let mut order: Vec<u32> = (0..logits.len() as u32)
        .filter(|&t| logits[t as usize].is_finite() && among(t))
        .collect();
    if scan < order.len() {
        order.select_nth_unstable_by(scan, by_likelihood);
        order.truncate(scan);
    }
    order.sort_unstable_by(by_likelihood);
    order
        .into_iter()
        .filter(|&t| allowed(t))
        .take(ALLOWED_KEPT)
        .collect()
}

/// The most bytes UTF-8 writes one letter with.
const MAX_LETTER_BYTES: usize = 4;

/// Tokens that end inside a character, and how many bytes of their whole
/// characters the constraint has read.
#[derive(Default)]
struct Unfinished {
    tokens: Vec<u32>,
    read: usize,
}

/// One completion being decoded.
pub struct RowState {
    sampler: Sampler,
    tokens: Vec<u32>,
    max_tokens: usize,
    stop: Vec<String>,
    /// Ignore end-of-turn tokens and the repetition cut.
    to_limit: bool,
    finished: Option<FinishReason>,
    /// The sampling constraint's view of this row's text.
    checker: Option<Box<dyn TextChecker>>,
    /// The last tokens, while they end inside a character.
    unfinished: Unfinished,
    /// The constraint allowed none of the likeliest tokens at its last
    /// refusal; tokens are taken as drawn until it allows one again.
    rule_stuck: bool,
}

impl RowState {
    /// Row `row` of a request (each row samples with its own seed).
    pub fn new(sampling: &Sampling, row: usize, max_tokens: usize) -> Self {
        RowState {
            sampler: Sampler::new(sampling, row),
            tokens: Vec::new(),
            max_tokens,
            stop: sampling.stop.clone(),
            to_limit: sampling.to_limit,
            finished: (max_tokens == 0).then_some(FinishReason::Length),
            checker: sampling.constraint.as_ref().map(|c| c.0.checker()),
            unfinished: Unfinished::default(),
            rule_stuck: false,
        }
    }

    /// The `n` rows of one request.
    pub fn for_request(sampling: &Sampling, max_tokens: usize) -> Vec<RowState> {
        (0..sampling.n.max(1))
            .map(|row| RowState::new(sampling, row, max_tokens))
            .collect()
    }

    /// The tokens sampled so far.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Tokens the row may still draw.
    pub fn tokens_left(&self) -> usize {
        self.max_tokens.saturating_sub(self.tokens.len())
    }

    /// Whether the row still takes tokens.
    pub fn is_running(&self) -> bool {
        self.finished.is_none()
    }

    /// What to feed next (for a finished row, anything: its output is ignored).
    pub fn last_token(&self) -> u32 {
        self.tokens.last().copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::constraint::Constraint;
    use tokenizers::models::wordlevel::WordLevel;

    const VOCAB: usize = 10;

    fn codec() -> TextCodec {
        codec_of(VOCAB)
    }

    /// A codec whose token `i` is the word `t{i}`.
    fn codec_of(size: usize) -> TextCodec {
        codec_stopping_at(size, Vec::new())
    }

    /// The same, with `stop_tokens` ending a sequence.
    fn codec_stopping_at(size: usize, stop_tokens: Vec<u32>) -> TextCodec {
        let vocab = (0..size).map(|i| (format!("t{i}"), i as u32)).collect();
        let model = WordLevel::builder()
            .vocab(vocab)
            .unk_token("t0".into())
            .build()
            .unwrap();
        TextCodec::new(
            "test".into(),
            Tokenizer::new(model),
            None,
            stop_tokens,
            1024,
        )
    }

    /// A model that knows one text per row: after any prefix of its row's
    /// text it predicts that text's next token; after anything else (a
    /// rejected guess left in its states, say) it predicts token 0.
    struct KnownTexts {
        texts: Vec<Vec<u32>>,
        states: Vec<Vec<u32>>,
        passes: usize,
    }

    fn logits_after(text: &[u32], states: &[u32]) -> Vec<f32> {
        let next = match text.get(states.len()) {
            Some(&next) if text.starts_with(states) => next,
            _ => 0,
        };
        (0..VOCAB as u32)
            .map(|t| if t == next { 1.0 } else { 0.0 })
            .collect()
    }

    impl DraftTarget for KnownTexts {
        fn feed(&mut self, inputs: &[Vec<u32>]) -> Result<Vec<Vec<Vec<f32>>>> {
            assert_eq!(inputs.len(), self.states.len(), "one input per row");
            self.passes += 1;
            Ok(inputs
                .iter()
                .zip(&self.texts)
                .zip(&mut self.states)
                .map(|((input, text), states)| {
                    input
                        .iter()
                        .map(|&t| {
                            states.push(t);
                            logits_after(text, states)
                        })
                        .collect()
                })
                .collect())
        }

        fn discard(&mut self, positions: &[usize]) -> Result<()> {
            for (states, &count) in self.states.iter_mut().zip(positions) {
                states.truncate(states.len() - count);
            }
            Ok(())
        }

        fn keep_rows(&mut self, rows: &[usize]) -> Result<()> {
            self.texts = rows.iter().map(|&r| self.texts[r].clone()).collect();
            self.states = rows.iter().map(|&r| self.states[r].clone()).collect();
            Ok(())
        }
    }

    #[test]
    fn drafted_decoding_writes_each_rows_text_and_drops_rejected_guesses() {
        // The prompt repeats "1 2" with two continuations, and the answers
        // share pieces, so some guesses are right and some wrong; the rows
        // differ in length, so they keep different numbers of guesses per
        // pass and leave the batch at different times.
        let prompt = vec![1, 2, 3, 3, 5, 1, 2, 4, 6];
        let answers = vec![
            vec![1, 2, 3, 3, 5, 7, 1, 2, 9, 8, 6, 5, 4],
            vec![1, 2, 4, 6, 1, 2, 3, 3],
            vec![1, 2, 9, 8, 6, 5, 4, 3, 3, 5, 7, 1, 2, 4, 6, 9, 8],
        ];
        let mut model = KnownTexts {
            texts: answers
                .iter()
                .map(|a| [prompt.clone(), a.clone()].concat())
                .collect(),
            states: vec![prompt.clone(); answers.len()],
            passes: 0,
        };
        let mut rows: Vec<RowState> = answers
            .iter()
            .enumerate()
            .map(|(row, a)| RowState::new(&Sampling::default(), row, a.len()))
            .collect();
        let first = logits_after(&model.texts[0], &prompt);
        let count = codec()
            .decode_drafted(&mut rows, &prompt, &[], &first, 3, &mut model)
            .unwrap();
        for (row, answer) in rows.iter().zip(&answers) {
            assert_eq!(row.tokens(), answer.as_slice());
            assert_eq!(row.finished, Some(FinishReason::Length));
        }
        assert!(count.kept > 0 && count.kept < count.guessed, "{count:?}");
        let longest = answers.iter().map(Vec::len).max().unwrap();
        assert!(model.passes < longest - 1, "{} passes", model.passes);
        // The rows that finished last are still in the model, holding their
        // prompt and answer, less a last token that was never fed.
        assert!(!model.states.is_empty() && model.states.len() < answers.len());
        for (states, text) in model.states.iter().zip(&model.texts) {
            assert!(text.starts_with(states));
            assert!(states.len() >= text.len() - 1);
        }
    }

    type PieceTest = std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>;

    /// A test rule: a token's text alone decides, whatever came before;
    /// the second test picks the tokens worth trying.
    struct Rule(PieceTest, PieceTest);

    impl super::super::constraint::TextConstraint for Rule {
        fn checker(&self) -> Box<dyn TextChecker> {
            Box::new(Rule(
                std::sync::Arc::clone(&self.0),
                std::sync::Arc::clone(&self.1),
            ))
        }
    }

    impl TextChecker for Rule {
        fn allows(&self, piece: &str) -> bool {
            (self.0)(piece)
        }
        fn allows_end(&self) -> bool {
            (self.0)(END)
        }
        fn push(&mut self, _: &str) {}
        fn worth_trying(&self, piece: &str) -> bool {
            (self.1)(piece)
        }
    }

    /// What a test rule is asked when the model would end the completion.
    const END: &str = "<end>";

    /// The sampling setting for a rule on each token's text.
    fn rule(allows: impl Fn(&str) -> bool + Send + Sync + 'static) -> Option<Constraint> {
        rule_trying(allows, |_| false)
    }

    /// The same, with the tokens `worth_trying` picks worth trying.
    fn rule_trying(
        allows: impl Fn(&str) -> bool + Send + Sync + 'static,
        worth_trying: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Option<Constraint> {
        Some(Constraint(std::sync::Arc::new(Rule(
            std::sync::Arc::new(allows),
            std::sync::Arc::new(worth_trying),
        ))))
    }

    /// Logits over the test vocabulary where `first` is the likeliest
    /// token and `second` the next.
    fn two_likeliest(first: usize, second: usize) -> Vec<f32> {
        (0..VOCAB)
            .map(|t| match t {
                t if t == first => 5.0,
                t if t == second => 4.0,
                _ => 0.0,
            })
            .collect()
    }

    /// One row after its first token is drawn from `logits`.
    fn first_step(codec: &TextCodec, sampling: &Sampling, logits: &[f32]) -> RowState {
        let mut rows = RowState::for_request(sampling, 1);
        codec
            .decode_rows(&mut rows, vec![logits.to_vec()], |_, _| Ok(vec![]))
            .unwrap();
        rows.remove(0)
    }

    #[test]
    fn a_refused_token_is_drawn_again_without_it() {
        let codec = codec();
        // Token 3 is the most likely, token 5 the next.
        let logits = two_likeliest(3, 5);
        let free = Sampling {
            max_tokens: 1,
            ..Sampling::default()
        };
        let constrained = Sampling {
            // Refuses the text of token 3.
            constraint: rule(|piece| piece != "t3"),
            ..free.clone()
        };
        let first_token = |sampling: &Sampling| first_step(&codec, sampling, &logits).tokens()[0];
        assert_eq!(first_token(&free), 3);
        assert_eq!(first_token(&constrained), 5);
        // At a temperature too: never the refused token.
        let warm = Sampling {
            temperature: 1.0,
            top_p: 1.0,
            ..constrained
        };
        for seed in 0..20 {
            let sampling = Sampling {
                seed,
                ..warm.clone()
            };
            assert_ne!(first_token(&sampling), 3);
        }
    }

    #[test]
    fn a_rule_that_refuses_to_end_keeps_the_completion_going() {
        // Token 1 ends a sequence and is the most likely; token 5 is next.
        let codec = codec_stopping_at(VOCAB, vec![1]);
        let logits = two_likeliest(1, 5);
        let first = |constraint: Option<Constraint>| {
            let sampling = Sampling {
                max_tokens: 1,
                constraint,
                ..Sampling::default()
            };
            let row = first_step(&codec, &sampling, &logits);
            (row.tokens().to_vec(), row.finished)
        };
        assert_eq!(first(rule(|_| true)), (vec![], Some(FinishReason::Stop)));
        assert_eq!(
            first(rule(|piece| piece != END)),
            (vec![5], Some(FinishReason::Length))
        );
    }

    #[test]
    fn the_allowed_token_is_found_where_redraws_would_never_reach_it() {
        let codec = codec_of(100);
        // Ninety-nine refused tokens about equally likely, the allowed one
        // far below them: redrawing finds it with odds of about e^-25.
        let logits: Vec<f32> = (0..100)
            .map(|t| {
                if t == 90 {
                    -15.0
                } else {
                    10.0 - t as f32 * 0.01
                }
            })
            .collect();
        for (temperature, seed) in [(0.0, 0), (1.0, 1), (1.0, 2), (0.7, 3)] {
            let sampling = Sampling {
                max_tokens: 1,
                temperature,
                top_p: 1.0,
                seed,
                constraint: rule(|piece| piece == "t90"),
                ..Sampling::default()
            };
            let row = first_step(&codec, &sampling, &logits);
            assert_eq!(row.tokens(), &[90], "temperature {temperature}");
        }
    }

    #[test]
    fn an_allowed_token_below_the_likeliest_is_found_among_those_worth_trying() {
        let size = ALLOWED_SCAN + 100;
        let codec = codec_of(size);
        // The allowed token is the least likely of all.
        let logits: Vec<f32> = (0..size).map(|t| -(t as f32)).collect();
        let last = format!("t{}", size - 1);
        let sampling = |worth_trying: bool| {
            let wanted = last.clone();
            let picked = last.clone();
            Sampling {
                max_tokens: 1,
                temperature: 1.0,
                top_p: 1.0,
                constraint: rule_trying(
                    move |piece| piece == wanted,
                    move |piece| worth_trying && (piece == picked || piece == "t7"),
                ),
                ..Sampling::default()
            }
        };
        let row = first_step(&codec, &sampling(true), &logits);
        assert_eq!(row.tokens(), &[size as u32 - 1]);
        // Not deemed worth trying: the rule stands aside.
        let row = first_step(&codec, &sampling(false), &logits);
        assert_ne!(row.tokens(), &[size as u32 - 1]);
    }

    /// The token greedy decoding writes first under `constraint`, over
    /// 100 tokens where token 5 is the model's clear choice and the rest
    /// fall off slowly in order (0, 1, 2, ...).
    fn greedy_first_choice_under(constraint: Option<Constraint>) -> Vec<u32> {
        let logits: Vec<f32> = (0..100)
            .map(|t| if t == 5 { 20.0 } else { 10.0 - t as f32 * 0.01 })
            .collect();
        let sampling = Sampling {
            max_tokens: 1,
            temperature: 0.0,
            constraint,
            ..Sampling::default()
        };
        first_step(&codec_of(100), &sampling, &logits)
            .tokens()
            .to_vec()
    }

    #[test]
    fn a_rule_that_stands_aside_lets_the_model_write_its_first_choice() {
        assert_eq!(greedy_first_choice_under(rule(|_| false)), [5]);
    }

    /// A rule that allows `strict` pieces, and `last_resort` ones too
    /// where nothing likely it allows is at hand.
    struct Tiered {
        strict: &'static [&'static str],
        last_resort: &'static [&'static str],
    }

    impl super::super::constraint::TextConstraint for Tiered {
        fn checker(&self) -> Box<dyn TextChecker> {
            Box::new(Tiered {
                strict: self.strict,
                last_resort: self.last_resort,
            })
        }
    }

    impl TextChecker for Tiered {
        fn allows(&self, piece: &str) -> bool {
            self.strict.contains(&piece)
        }
        fn allows_as_last_resort(&self, piece: &str) -> bool {
            self.allows(piece) || self.last_resort.contains(&piece)
        }
        fn push(&mut self, _: &str) {}
    }

    #[test]
    fn the_last_resort_takes_the_models_first_choice_only_when_nothing_likely_is_allowed() {
        let written = |strict: &'static [&'static str]| {
            greedy_first_choice_under(Some(Constraint(std::sync::Arc::new(Tiered {
                strict,
                last_resort: &["t5"],
            }))))
        };
        // Among the likeliest, the strict rule's choice wins.
        assert_eq!(written(&["t1", "t90"]), [1]);
        // Only far down (t90): the model's first choice, which the last
        // resort allows.
        assert_eq!(written(&["t90"]), [5]);
    }

    #[test]
    fn a_rule_that_allows_nothing_stands_aside_after_one_search() {
        use std::sync::atomic::Ordering;
        let codec = codec_of(100);
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = std::sync::Arc::clone(&asked);
        let sampling = Sampling {
            max_tokens: 3,
            temperature: 1.0,
            top_p: 1.0,
            // Refuses everything and counts how often it is asked.
            constraint: rule(move |_| {
                counter.fetch_add(1, Ordering::Relaxed);
                false
            }),
            ..Sampling::default()
        };
        let logits = vec![0.0f32; 100];
        let mut rows = RowState::for_request(&sampling, 3);
        codec
            .decode_rows(&mut rows, vec![logits.clone()], |_, _| {
                Ok(vec![logits.clone()])
            })
            .unwrap();
        assert_eq!(rows[0].tokens().len(), 3);
        // The first position: the first draw, the redraws, the first draw
        // again as a last resort, and every token left; each later one:
        // its one draw.
        assert_eq!(asked.load(Ordering::Relaxed), 100 + 1 + 2);
    }
}
