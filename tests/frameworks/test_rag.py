"""A RAG agent: LangChain's OpenAI embeddings into an in-memory vector store, then a chat."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_openai")

DOCS = [
    "The Oslo office opens at 8am.",
    "The Lima office has a rooftop garden.",
    "The Kyoto office closes on public holidays.",
    "The Quito office is 2850 metres above sea level.",
]


def test_embeddings_retrieval_then_chat(battery: Any, tools: Any) -> None:
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings

    def agent() -> tuple[list[str], str]:
        # check_embedding_ctx_length=False: otherwise langchain-openai tokenizes with tiktoken,
        # whose encodings it downloads on first use (no network here, and none is needed).
        embeddings = OpenAIEmbeddings(model="text-embedding-3-small", check_embedding_ctx_length=False)
        store = InMemoryVectorStore.from_texts(DOCS, embeddings)
        retriever = store.as_retriever(search_kwargs={"k": 2})

        question = "Which office has a garden?"
        found = retriever.invoke(question)
        tools("retrieve", [d.page_content for d in found])  # the retrieval is agent code
        prompt = ChatPromptTemplate.from_messages(
            [("system", "Answer from the context only."), ("user", "Context:\n{context}\n\nQuestion: {question}")]
        )
        chain = prompt | ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        reply = chain.invoke({"context": "\n".join(d.page_content for d in found), "question": question})
        return [d.page_content for d in found], str(reply.content)

    found, answer = battery.run(agent)
    assert len(found) == 2 and set(found) <= set(DOCS)
    assert battery.live_tools == tools.names() == ["retrieve"]
    assert tools.calls[0][1] == found  # replay retrieved the same documents from the same vectors
    assert answer.startswith("Echo: Context:") and all(doc in answer for doc in found)
    kinds = [(e.kind, e.name) for e in battery.steps]
    assert kinds == [("llm", "openai.embeddings.create")] * 2 + [("llm", "openai.chat.completions.create")]
    documents, query, _ = battery.steps
    assert documents.request["input"] == DOCS
    assert query.request["input"] == ["Which office has a garden?"]


def test_agent_with_a_retrieval_tool(battery: Any, tools: Any) -> None:
    """The agentic form: the model decides to search; the tool embeds the query and retrieves."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings

    def agent() -> str:
        embeddings = OpenAIEmbeddings(model="text-embedding-3-small", check_embedding_ctx_length=False)
        store = InMemoryVectorStore.from_texts(DOCS, embeddings)

        @tool
        def search_docs(query: str) -> str:
            """Search the office handbook."""
            hits = store.similarity_search(query, k=1)
            tools("search_docs", query)
            return hits[0].page_content

        graph = create_agent(ChatOpenAI(model="gpt-4o-mini", max_retries=0), tools=[search_docs])
        state = graph.invoke({"messages": [{"role": "user", "content": 'search docs for "rooftop garden"'}]})
        return str(state["messages"][-1].content)

    answer = battery.run(agent)
    assert battery.live_tools == ["search_docs"]
    assert tools.calls == [("search_docs", "rooftop garden")]
    assert (
        answer.startswith("Based on the tool result: The ")
        and answer.removeprefix("Based on the tool result: ") in DOCS
    )
    names = [e.name for e in battery.steps]
    assert names == [
        "openai.embeddings.create",  # the handbook
        "openai.chat.completions.create",  # the model asks to search
        "openai.embeddings.create",  # the tool embeds the query
        "openai.chat.completions.create",  # the answer
    ]
